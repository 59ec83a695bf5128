"""``OfflineLanguageModel``: the deterministic stand-in used when no model is configured.

It needs no key and no network, and says so: its ``name`` is
``offline (rule-based)``. Reading (``extract``): spaCy's small English
pipeline parses the text (``nlp``: loaded once per process on first use, run on
one thread that parses concurrent observations together) and
``mapping`` turns each clause into triples — first person is the speaking
source ("I prefer X" from source alice -> alice prefers X; ``user`` only when
the source is the default ``user``), "my X" is the source's X, he/she the one
person the observation names (else the clause is left out), "X and Y" split
on subjects and objects, negation ("not", "never", "no longer", "no X"),
hedges (the shared table in ``mnemonet.llm.hedges``), possessive attributes
("my manager is Tom" -> has_manager), tense (past, present, future) and dates
("last year" -> ``valid_at`` 2025, resolved against the day the observation was said).
A change said in other words ("Frank took over as my manager", "the budget
was cut to 20k", "we relocated to Porto") is written on the slot the plain
statement of the new state uses, marked as a change (``mapping``, ``changes``).
Questions assert nothing. A sentence the parser yields nothing for goes to
the older regular-expression rules (``parser``), whose subjects must be clean.

Corrections ("sorry", "scratch that", "no wait", "I misspoke", any form of
the verb "correct" ...) mark a sentence's triples ``revision="correction"``:
"actually I hate mornings, afternoon is better" gives
(user, dislikes, mornings) and (user, prefers, afternoon). The rule
"<X> is better" -> (speaker, prefers, X) is stateless: the translator sees one
text at a time and cannot know that "afternoon" means afternoon *meetings*;
retrieval links the two through the shared speaker and ``morning``
concepts and the contradiction rules of ``judge_pairs``.

Limits: the small parser's own mistakes on chat (measured on the gold table,
docs/answers.md "Quality of the offline model"); no coreference beyond one named
person and the reporter of a reported clause; a capitalised subject is taken
for a person; no world knowledge (an organisation is told from a place by the
parser's entity label alone).
``infer_claims`` reads first person as the observation's source;
``judge_pairs`` receives no source and reads it as ``user``. Claims in the
canonical form (``mnemonet.llm.claims``) always parse (a leading "based on
..., " is dropped first); other claims go through the sentence reader.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from typing import TYPE_CHECKING

from mnemonet.llm.base import CandidatePair, Extraction, PairJudgement, ParsedClaim, Triple, WrittenAnswer
from mnemonet.llm.claims import parse_canonical_claim
from mnemonet.llm.errors import LanguageModelError
from mnemonet.llm.offline import nlp
from mnemonet.llm.offline.concepts import concepts_for, topics_for
from mnemonet.llm.offline.extract import extract_triples, reading_of, strip_lead_in, with_elided_subjects
from mnemonet.llm.offline.processes import ReadingPool
from mnemonet.llm.offline.reasoning import infer_from, judge, select_memory, summarise_facts, write_answer
from mnemonet.llm.provider import BaseLanguageModel
from mnemonet.llm.validation import checked_triple
from mnemonet.settings import Settings

if TYPE_CHECKING:
    from spacy.tokens import Doc


class OfflineLanguageModel(BaseLanguageModel):
    """Rule-based ``LanguageModel``: deterministic, no network, no key."""

    def __init__(self, settings: Settings, today: Callable[[], date] = date.today) -> None:
        super().__init__(settings)
        # Dates in the text ("last year") resolve against the day the observation was said when the
        # caller gives it (deferred extraction runs days later), else against the day of reading.
        self._today = today
        self._pool: ReadingPool | None = None  # offline_parse_processes: the reading in worker processes

    def _processes(self) -> ReadingPool | None:
        if self._pool is None and self.settings.offline_parse_processes > 0:
            self._pool = ReadingPool(self.settings.offline_parse_processes, self.settings.offline_parse_batch_max)
        return self._pool

    @property
    def name(self) -> str:
        return "offline (rule-based)"

    async def warm_up(self) -> None:
        """Load the English pipeline now (seconds on a loaded machine) rather than in the first call."""
        pool = self._processes()
        await (pool.warm_up() if pool is not None else asyncio.to_thread(nlp.pipeline))

    async def aclose(self) -> None:
        if self._pool is not None:
            await asyncio.to_thread(self._pool.close)
            self._pool = None

    def _checked(self, triples: list[Triple]) -> list[Triple]:
        # Over-long names or odd predicates from unusual text are dropped, not stored.
        out = []
        for t in triples:
            try:
                out.append(checked_triple(t, "statement", self.settings))
            except LanguageModelError:
                continue
        return out[: self.settings.max_statements_per_write]

    async def _read(self, text: str, speaker: str, day: date | None = None) -> list[Triple]:
        # Parsing (~4-8 ms a chat turn) and the rules (~0.5 ms) are CPU work: off the event loop, so the
        # node keeps serving. Both run on the pipeline's own thread, the parse batched with concurrent ones.
        pool = self._processes()
        if pool is not None:
            return await pool.read(text, speaker, day or self._today())
        reading, day = reading_of(text), day or self._today()

        def first(doc: Doc) -> tuple[str | None, list[Triple]]:
            said = with_elided_subjects(doc)
            return (said, []) if said is not None else (None, extract_triples(doc, reading, speaker, day))

        said, triples = await nlp.read(reading.body, self.settings, first)
        if said is not None:  # chat that left its "I" out: read it with the "I" said (a second parse, rare)
            again = replace(reading, body=said)
            triples = await nlp.read(said, self.settings, lambda doc: extract_triples(doc, again, speaker, day))
        return triples

    async def _extract_observation(self, text: str, source: str, day: date | None, infer: bool) -> Extraction:
        triples = self._checked(await self._read(text, source, day))
        concepts = concepts_for(triples)[: self.settings.max_concepts_per_write]
        inferred = self._checked(infer_from(triples)) if infer else []  # the same parse: no second reading
        return Extraction(concepts=concepts, statements=triples, topics=topics_for(triples), inferred=inferred)

    async def _parse_claim(self, text: str, source: str) -> ParsedClaim:
        text = strip_lead_in(text)  # a claim's "based on ..., " is its grounds, not its subject
        triple = parse_canonical_claim(text, source)
        candidates = [triple] if triple is not None else await self._read(text, source)
        checked = self._checked(candidates)
        if not checked:
            raise LanguageModelError(
                "offline (rule-based): could not read a statement in the claim; write it as "
                "'<subject> <verb> <object> (confidence 0.8)', e.g. 'user prefers afternoon meetings'"
            )
        return ParsedClaim(triple=checked[0], concepts=concepts_for(checked[:1]))

    async def _infer_claims(self, text: str, source: str) -> list[Triple]:
        return self._checked(infer_from(await self._read(text, source)))

    async def _judge_pairs(self, pairs: list[CandidatePair]) -> list[PairJudgement]:
        out = []
        for i, pair in enumerate(pairs):
            a, b = await self._one_triple(pair.a), await self._one_triple(pair.b)
            if a is None or b is None:
                out.append(PairJudgement(index=i, contradicts=False, reason="offline rules could not read a statement"))
            else:
                out.append(judge(a, b, i))
        return out

    async def _one_triple(self, text: str) -> Triple | None:
        triple = parse_canonical_claim(text)
        if triple is None:
            found = await self._read(text, "user")
            triple = found[0] if found else None
        return triple

    async def _answer(self, query: str, memory: list[tuple[str, str]]) -> WrittenAnswer:
        lines = select_memory(query, memory, self.settings.offline_answer_max_lines)
        return WrittenAnswer(text=write_answer(lines), cited=[mid for mid, _ in lines])

    async def _summarise(self, concept: str, statements: list[str], previous: str | None) -> str:
        return summarise_facts(concept, statements, previous, self.settings.llm_summary_max_chars)
