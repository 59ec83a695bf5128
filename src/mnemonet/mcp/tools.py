"""The MCP tools over any ``MemoryAPI``: compact, agent-shaped results and one clear error per failure."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError

from mnemonet.llm.errors import LanguageModelError
from mnemonet.model.api import MemoryAPI
from mnemonet.model.errors import Forbidden, InvalidInput
from mnemonet.model.views import ContradictionView, StatementView
from mnemonet.p2p.errors import NoCapablePeer, P2PError
from mnemonet.settings import Settings

Text = Annotated[str, Field(description="Plain natural language, one fact or event per call works best.")]
Source = Annotated[str, Field(description="Who is speaking: your agent name, or 'user' when relaying the user.")]
Key = Annotated[str | None, Field(description="Optional client-made id; a retry with the same key writes nothing new.")]
Basis = Annotated[list[str] | None, Field(description="Ids (from search/recent/load) this claim rests on.")]
Query = Annotated[str, Field(description="A natural-language question or search phrase.")]
Kinds = Annotated[
    list[Literal["observation", "statement", "concept", "summary"]] | None,
    Field(description="Only these kinds of items; default all."),
]
Limit = Annotated[int, Field(description="How many items, newest first.")]
Space = Annotated[
    str | None,
    Field(description="Optional memory space to work in; default the token's first space. The token decides "
                      "which spaces are allowed."),
]


class Written(BaseModel):
    """What ``observe`` stored."""

    observation_id: str
    created: bool = Field(description="False when this idempotency key was already written (a retry).")
    statements: list[str] = Field(description="Statements extracted from the text, as sentences.")
    concepts: list[str]


class Claimed(BaseModel):
    """What ``claim`` stored."""

    statement_id: str
    created: bool
    statement: str | None
    supersedes: list[str]
    contradicts: list[str]


class Retracted(BaseModel):
    """What ``retract`` recorded (or the standing retraction, when the item was retracted already)."""

    retraction_id: str
    target_id: str
    kind: str = Field(description="statement or observation")
    created: bool = Field(description="False when the item was retracted already; its first retraction stands.")
    reason: str
    source: str = Field(description="Who retracted it.")
    flagged: list[str] = Field(description="Statements derived only from it, now left out of answers too.")


class Brief(BaseModel):
    """One statement on one line."""

    id: str
    text: str
    source: str | None
    confidence: float


class Conflict(BaseModel):
    """Two current statements that contradict each other."""

    a: Brief
    b: Brief
    reason: str


class Answered(BaseModel):
    """What ``remember`` answered."""

    answer: str
    cited: list[str] = Field(description="Ids the answer rests on; pass them to load for provenance.")
    contradictions: list[Conflict]
    provider: str = Field(description="The language model that wrote the answer.")
    confidence: float = Field(description="The answering statement's confidence weighed by agreement; 0 if none.")
    degraded: bool = Field(description="True when no language model answered and the answer was composed by rule.")


class Hit(BaseModel):
    """A compact search hit."""

    id: str
    kind: str
    score: float
    text: str


class Hits(BaseModel):
    """Search results, best first."""

    hits: list[Hit]


class Loaded(BaseModel):
    """Full items, in the order asked; ids not found are listed in ``missing``."""

    items: list[dict[str, Any]]
    missing: list[str]


class RecentItem(BaseModel):
    """A recent observation or statement."""

    id: str
    text: str
    source: str | None
    created_at: int


class Recent(BaseModel):
    """Newest writes first."""

    observations: list[RecentItem]
    statements: list[RecentItem]


class Conflicts(BaseModel):
    """Open contradictions, newest first."""

    contradictions: list[Conflict]


class Briefed(BaseModel):
    """What a new session should know, within a token budget."""

    brief: str = Field(description="Current facts, open conflicts, changes and the most used concepts, each line "
                       "citing short ids (load takes them).")
    cited: list[str] = Field(description="The full ids the brief cites.")
    tokens: int = Field(description="The brief's size, estimated as characters / 4.")
    omitted: int = Field(description="Lines left out to stay within the budget; ask again with a larger one.")


@contextlib.contextmanager
def _as_tool_errors() -> Iterator[None]:
    # The agent gets one readable line; anything else would surface as a generic "tool failed".
    try:
        yield
    except NoCapablePeer as exc:
        raise ToolError(f"no store node is reachable right now ({exc.message}); try again shortly") from exc
    except P2PError as exc:
        raise ToolError(f"memory network error ({exc.code}): {exc.message}") from exc
    except Forbidden as exc:  # a valid token without the scope or space: say which, so the agent can tell its user
        raise ToolError(f"the node refused: {exc}") from exc
    except LanguageModelError as exc:
        raise ToolError(f"the language model could not handle this: {exc}") from exc
    except (InvalidInput, ValidationError) as exc:  # a bug's ValueError is not the agent's to read
        raise ToolError(f"refused: {exc}") from exc


def _brief(s: StatementView) -> Brief:
    return Brief(id=s.id, text=s.sentence(), source=s.source, confidence=round(s.confidence, 3))


def _conflict(c: ContradictionView) -> Conflict:
    return Conflict(a=_brief(c.a), b=_brief(c.b), reason=c.reason)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)] + "…"


class MemoryTools:
    """The nine tools, each a thin, validated, bounded call to ``MemoryAPI``."""

    def __init__(self, memory: MemoryAPI, settings: Settings) -> None:
        self._memory = memory
        self._max = settings.mcp_max_items
        self._hit_chars = settings.mcp_hit_chars

    def _count(self, name: str, value: int) -> int:
        if not 1 <= value <= self._max:
            raise ToolError(f"{name}: must be between 1 and {self._max}")
        return value

    async def observe(self, text: Text, source: Source = "agent", idempotency_key: Key = None,
                      space: Space = None) -> Written:
        """See the tool description in ``mnemonet.mcp.server``."""
        with _as_tool_errors():
            result = await self._memory.observe(text, source, idempotency_key=idempotency_key, space=space)
        return Written(observation_id=result.observation_id, created=result.created,
                       statements=[s.sentence() for s in result.statements], concepts=result.concepts)

    async def claim(self, text: Text, source: Source = "agent", basis: Basis = None,
                    idempotency_key: Key = None, space: Space = None) -> Claimed:
        """See the tool description in ``mnemonet.mcp.server``."""
        if basis is not None and len(basis) > self._max:
            raise ToolError(f"basis: at most {self._max} ids")
        with _as_tool_errors():
            result = await self._memory.claim(text, source, idempotency_key=idempotency_key, basis=basis,
                                             space=space)
        return Claimed(statement_id=result.statement_id, created=result.created,
                       statement=result.statement.sentence() if result.statement else None,
                       supersedes=result.supersedes, contradicts=result.contradicts)

    async def retract(
        self, id: Annotated[str, Field(description="Id of a statement or observation (full or as answers print it).")],
        reason: Annotated[str, Field(description="Why it is taken back; kept with the retraction.")],
        source: Source = "agent", space: Space = None,
    ) -> Retracted:
        """See the tool description in ``mnemonet.mcp.server``."""
        with _as_tool_errors():
            result = await self._memory.retract(id, reason, source, space=space)
        return Retracted(retraction_id=result.retraction_id, target_id=result.target_id, kind=result.kind,
                         created=result.created, reason=result.reason, source=result.source, flagged=result.flagged)

    async def remember(self, query: Query, space: Space = None) -> Answered:
        """See the tool description in ``mnemonet.mcp.server``."""
        with _as_tool_errors():
            answer = await self._memory.remember(query, space=space)
        return Answered(answer=answer.text, cited=answer.cited, provider=answer.provider,
                        confidence=answer.confidence, degraded=answer.degraded,
                        contradictions=[_conflict(c) for c in answer.recall.contradictions])

    async def search(
        self, query: Query, k: Annotated[int, Field(description="How many hits (best first).")] = 10,
        kinds: Kinds = None, space: Space = None,
    ) -> Hits:
        """See the tool description in ``mnemonet.mcp.server``."""
        self._count("k", k)
        with _as_tool_errors():
            hits = await self._memory.search(query, k=k, kinds=list(kinds) if kinds else None, space=space)
        return Hits(hits=[Hit(id=h.id, kind=h.kind, score=round(h.score, 4), text=_one_line(h.text, self._hit_chars))
                          for h in hits])

    async def load(self, ids: Annotated[list[str], Field(description="Ids from search, recent or cited.")],
                   space: Space = None) -> Loaded:
        """See the tool description in ``mnemonet.mcp.server``."""
        self._count("ids (number of ids)", len(ids))
        with _as_tool_errors():
            items = await self._memory.load(ids, space=space)
        found = {str(item.get("id")) for item in items}
        return Loaded(items=items, missing=[i for i in ids if i not in found])

    async def recent(self, limit: Limit = 10, space: Space = None) -> Recent:
        """See the tool description in ``mnemonet.mcp.server``."""
        self._count("limit", limit)
        with _as_tool_errors():
            observations = await self._memory.get_recent_observations(limit, space=space)
            statements = await self._memory.get_recent_statements(limit, space=space)
        return Recent(
            observations=[RecentItem(id=o.id, text=o.text, source=o.source, created_at=o.created_at)
                          for o in observations],
            statements=[RecentItem(id=s.id, text=s.sentence(), source=s.source, created_at=s.created_at)
                        for s in statements],
        )

    async def contradictions(self, limit: Limit = 10, space: Space = None) -> Conflicts:
        """See the tool description in ``mnemonet.mcp.server``."""
        self._count("limit", limit)
        with _as_tool_errors():
            found = await self._memory.get_unresolved_contradictions(limit, space=space)
        return Conflicts(contradictions=[_conflict(c) for c in found])

    async def brief(
        self, subject: Annotated[str | None, Field(description="A person, project or thing; leave out for the "
                                                   "team's most recent and most used subjects.")] = None,
        since_hours: Annotated[float | None, Field(description="Also list what changed in the last this many "
                                                   "hours.")] = None,
        budget: Annotated[int | None, Field(description="Most tokens the brief may take (the node's default "
                                            "when left out).")] = None,
        space: Space = None,
    ) -> Briefed:
        """See the tool description in ``mnemonet.mcp.server``."""
        since = None
        if since_hours is not None:
            if not math.isfinite(since_hours) or since_hours <= 0:
                raise ToolError("since_hours: must be a number of hours above 0")
            since = max(0, int((time.time() - since_hours * 3600) * 1000))
        with _as_tool_errors():
            made = await self._memory.brief(subject, since, budget, space=space)
        return Briefed(brief=made.text, cited=made.cited, tokens=made.tokens, omitted=made.omitted)
