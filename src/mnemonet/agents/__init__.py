"""Worker agents: inference, contradiction validation and consolidation; they see only ``WorkerMemory``."""

from __future__ import annotations

from mnemonet.agents.base import Subscribe, WorkerAgent
from mnemonet.agents.consolidation import ConsolidationAgent
from mnemonet.agents.inference import InferenceAgent
from mnemonet.agents.ownership import Ownership, rendezvous_owner
from mnemonet.agents.validation import ValidationAgent
from mnemonet.llm.base import LanguageModel
from mnemonet.model.api import WorkerMemory
from mnemonet.settings import Settings

WORKER_CAPABILITIES = ("inference", "validation", "consolidation")


def make_worker(capability: str, api: WorkerMemory, llm: LanguageModel, settings: Settings, ownership: Ownership,
                subscribe: Subscribe | None = None) -> WorkerAgent:
    """The worker behind a worker capability."""
    if capability == "inference":
        return InferenceAgent(api, settings, ownership, subscribe)
    if capability == "validation":
        return ValidationAgent(api, settings, ownership, llm, subscribe=subscribe)
    if capability == "consolidation":
        return ConsolidationAgent(api, settings, ownership, llm, subscribe=subscribe)
    raise ValueError(f"capability: {capability!r} is not a worker (expected one of {WORKER_CAPABILITIES})")


__all__ = [
    "ConsolidationAgent", "InferenceAgent", "Ownership", "ValidationAgent", "WORKER_CAPABILITIES", "WorkerAgent",
    "make_worker", "rendezvous_owner",
]
