"""The offline reading in worker processes (``offline_parse_processes``) reads every text as the node does."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path

import yaml

from mnemonet.llm import OfflineLanguageModel
from mnemonet.settings import Settings

TODAY = date(2026, 11, 23)
GOLD = Path(__file__).resolve().parent / "gold_offline.yaml"


async def test_worker_processes_read_every_text_as_the_node_does() -> None:
    texts = [(c["text"], c["speaker"]) for c in yaml.safe_load(GOLD.read_text())["cases"]][:24]
    here = OfflineLanguageModel(Settings(llm="offline"), today=lambda: TODAY)
    apart = OfflineLanguageModel(Settings(llm="offline", offline_parse_processes=2), today=lambda: TODAY)
    try:
        await apart.warm_up()
        expected = [await here.extract_observation(text, speaker) for text, speaker in texts]
        # All at once: texts queue while both workers are busy and go to the next free one together.
        got = await asyncio.gather(*(apart.extract_observation(text, speaker) for text, speaker in texts))
        assert [e.statements for e in got] == [e.statements for e in expected]
    finally:
        await apart.aclose()
    assert apart._pool is None
