"""Claims: a statement asserted in words, with its basis.

``claim`` parses one sentence into a statement (one language-model call),
finds its basis by search among items sharing a concept with it (unless the
caller names one, which must not be retracted), writes ``SUPERSEDES`` when the
sentence says what it replaces (", superseding ...", "instead of ...",
"no longer ..."), and links two existing statements when it reads
"A contradicts B".
"""

from __future__ import annotations

from mnemonet.llm.base import Triple
from mnemonet.llm.claims import Supersession, parse_canonical_claim, split_supersession
from mnemonet.model.api import ClaimResult
from mnemonet.model.errors import InvalidInput
from mnemonet.model.ids import keyed_id, new_id
from mnemonet.model.records import ClaimRecord, SourceSpec, StatementLink, check_id, normalise_name
from mnemonet.model.views import StatementView
from mnemonet.service.common import MAX_LIMIT, MAX_LOAD_IDS, sentence_of, source_spec, statement_spec
from mnemonet.service.context import ServiceContext
from mnemonet.truth.reference import named

# Statements a reference is checked against beyond its subject's, and named when it resolves to none.
NAMED_CANDIDATES = 5
# Hits at or above this normalised score may serve as a claim's basis.
BASIS_MIN_SCORE = 0.5


class Claims:
    """Writes claims (``MemoryService.claim``)."""

    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None, writer: str = "",
    ) -> ClaimResult:
        """Assert a statement; its basis is found by search among items sharing a concept with it.

        Supersession said in words (", superseding ...", "instead of ...", "no longer ...")
        writes ``SUPERSEDES`` over the matching current statement; "A contradicts B" links two
        existing statements. ``writer``: whose ``idempotency_key`` it is (as for ``observe``).
        """
        ctx = self._ctx
        text = ctx.check_input(text, "text")
        speaker = source_spec(source, "agent")
        if basis:
            await self._refuse_withdrawn(basis)
        statement_id = keyed_id("st", idempotency_key, writer, ctx.space) if idempotency_key else new_id("st")
        # An erasure of this source finds the claim whole or not at all, and none erases its basis meanwhile.
        async with ctx.writing(speaker.name, derived=True):
            return await self._claim(statement_id, text, speaker, basis)

    async def _claim(self, statement_id: str, text: str, speaker: SourceSpec, basis: list[str] | None) -> ClaimResult:
        ctx = self._ctx
        said = split_supersession(text)
        claim_text = text
        if said is not None and (said.kind != "no_longer" or parse_canonical_claim(said.claim, speaker.name)):
            claim_text = said.claim  # "no longer" in free text is left to the model (negation)
        parsed = await ctx.ask("claim", ctx.llm.parse_claim(claim_text, speaker.name))
        triple = parsed.triple
        if triple.predicate == "contradicts":
            return await self._claim_contradiction(triple, text, speaker)
        replaced = await self._superseded_by(triple, said, statement_id) if said is not None else []
        concepts = {normalise_name(triple.subject), normalise_name(triple.object)}
        concepts |= {normalise_name(n) for c in parsed.concepts for n in (c.name, *c.aliases)}
        derived_from = list(basis or []) or await self._find_basis(sentence_of(triple), concepts, statement_id)
        record = ClaimRecord(
            statement=statement_spec(statement_id, triple), source=speaker, text=text,
            concepts=tuple(parsed.concepts), derived_from=tuple(dict.fromkeys(derived_from)),
            supersedes=tuple(StatementLink(target_id=r.id, reason=f"{speaker.name}: {text}"[:1000])
                             for r in replaced),
        )
        result = await ctx.graph.write_claim(record)
        found = await ctx.graph.get_statements([statement_id])
        view = found[0] if found else None
        if view is not None:
            await ctx.index_statements([view])
        return ClaimResult(
            statement_id=statement_id, created=result.created, statement=view, derived_from=list(record.derived_from),
            supersedes=[r.id for r in replaced],
        )

    async def _superseded_by(self, triple: Triple, said: Supersession, own_id: str) -> list[StatementView]:
        """The current statements a claim says it replaces; ``ValueError`` when none matches."""
        current = [
            s for s in await self._ctx.graph.statements_about(triple.subject, limit=MAX_LIMIT)
            if s.id != own_id and s.summary is None and s.predicate == triple.predicate
            and normalise_name(s.subject) == normalise_name(triple.subject)
        ]
        same_object = [s for s in current if normalise_name(s.object) == normalise_name(triple.object)]
        if said.kind == "no_longer":
            matches = [s for s in same_object if s.negated != triple.negated]
        else:
            others = [s for s in current if s not in same_object]
            wanted = _content_words(said.target or "")
            scored = [(len(wanted & _content_words(s.sentence())), s) for s in others]
            best = max((n for n, _ in scored), default=0)
            matches = [s for n, s in scored if n == best] if wanted else others
            if wanted and best == 0:
                matches = []
        if not matches:
            what = said.target or sentence_of(triple.model_copy(update={"negated": not triple.negated}))
            raise InvalidInput(
                f"text: nothing current about {triple.subject} {triple.predicate.replace('_', ' ')} "
                f"matches {what!r} to supersede"
            )
        return matches

    async def _claim_contradiction(self, triple: Triple, text: str, source: SourceSpec) -> ClaimResult:
        """"A contradicts B" links the two statements it names with ``CONTRADICTS``.

        Each side resolves to the statement with its meaning (``truth.reference``: same subject, relation,
        polarity and object), superseded ones included, or the claim is refused naming the closest ones.
        """
        a = await self._find_statement(triple.subject, source.name)
        b = await self._find_statement(triple.object, source.name)
        if a.id == b.id:
            raise InvalidInput(f"text: both sides are the same statement ({a.sentence()!r}, {a.id})")
        created = await self._ctx.graph.link_statements("CONTRADICTS", a.id, b.id, text, source)
        return ClaimResult(statement_id=a.id, created=created, statement=a, contradicts=[a.id, b.id])

    async def _find_statement(self, sentence: str, speaker: str) -> StatementView:
        """The one statement ``sentence`` names, or ``InvalidInput`` naming the closest candidates."""
        ctx = self._ctx
        triple = parse_canonical_claim(sentence, speaker)
        hits = await ctx.retriever.search(sentence, k=NAMED_CANDIDATES, kinds=["statement"], mode="hybrid")
        near = await ctx.graph.get_statements([h.id for h in hits])
        if triple is not None:
            about = await ctx.graph.statements_about(triple.subject, limit=MAX_LIMIT, include_superseded=True)
            meant = StatementView(id="named", subject=triple.subject, predicate=triple.predicate,
                                  object=triple.object, negated=triple.negated, confidence=triple.confidence)
            found = named(meant, list({s.id: s for s in [*about, *near]}.values()), ctx.vocabulary)
            if len(found) == 1 or (found and normalise_name(found[0].object) == normalise_name(triple.object)):
                return found[0]
            if found:
                near = found
        closest = "; ".join(f"{s.sentence()!r} ({s.id})" for s in near[:NAMED_CANDIDATES]) or "none"
        raise InvalidInput(f"text: no statement in memory says {sentence!r} (superseded ones included); "
                           f"the closest: {closest}")

    async def _refuse_withdrawn(self, basis: object) -> None:
        """A retracted item (or a statement standing only on retracted ones) is never a basis: ``InvalidInput``."""
        if not isinstance(basis, list) or len(basis) > MAX_LOAD_IDS:
            raise InvalidInput(f"basis: must be a list of at most {MAX_LOAD_IDS} ids")
        ids = [check_id(b, "basis") for b in basis]
        withdrawn = {r.target_id for r in await self._ctx.graph.retractions_of(ids)}
        withdrawn |= {s.id for s in await self._ctx.graph.get_statements(ids) if s.withdrawn}
        if withdrawn:
            raise InvalidInput(f"basis: retracted, so never a basis: {', '.join(sorted(withdrawn))}")

    async def _find_basis(self, sentence: str, concepts: set[str], own_id: str) -> list[str]:
        """Top search hits that share a concept with the claim; none is a valid answer.

        Never the claim itself: a retry finds the statement its first write made (``own_id``)."""
        hits = await self._ctx.retriever.search(sentence, k=3, kinds=["observation", "statement"], mode="hybrid")
        hits = [h for h in hits if h.score >= BASIS_MIN_SCORE and h.id != own_id]
        if not hits:
            return []
        keys = await self._ctx.graph.concept_keys_of([h.id for h in hits])
        return [h.id for h in hits if keys.get(h.id, set()) & concepts]


_NOT_CONTENT = frozenset({"the", "a", "an", "claim", "statement", "fact", "one", "old", "earlier", "previous",
                          "that", "this", "about", "of", "my", "his", "her", "their"})


def _content_words(text: str) -> set[str]:
    # Crude singular so "mornings" meets "morning meetings".
    words = {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in normalise_name(text).split()}
    return words - _NOT_CONTENT
