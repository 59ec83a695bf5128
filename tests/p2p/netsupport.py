"""Helpers for network tests: fast timer settings, a node factory, an in-memory store.

``InMemoryStore`` stands in for ``MemoryService`` (which these tests do not
test): a small MemoryAPI implementation that honours idempotency keys the way
the service does (ids derived from the key), so exactly-once writes across
failover can be checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from mnemonet.model.api import Answer, ClaimResult, ForgetReport, InferredClaim, ObserveResult, Recall, RetractResult
from mnemonet.model.brief import SessionBrief
from mnemonet.model.errors import InvalidInput
from mnemonet.model.idempotency import IdempotencyConflict
from mnemonet.model.ids import derived_id, keyed_id, new_id
from mnemonet.model.spaces import DEFAULT_SPACE, SpaceView
from mnemonet.model.views import (
    AuditView,
    ConceptView,
    ContradictionView,
    ObservationView,
    SearchHit,
    StatementView,
    TombstoneView,
)
from mnemonet.node.peer_node import PeerNode
from mnemonet.p2p.network import SOCKETS, Network
from mnemonet.p2p.tokens import create_token
from mnemonet.service.erasure import check_may_retract
from mnemonet.settings import Settings
from mnemonet.store.graph_errors import UnknownReference

CLUSTER_KEY = "test-cluster-key"


def client_token(scopes: str = "read,write", name: str = "tester", key: str = CLUSTER_KEY, ttl: float = 3600.0,
                 spaces: str = "default") -> str:
    """A client token of the test cluster (clients hold tokens; the cluster key is the peers')."""
    return create_token(key, name, scopes.split(","), ttl, spaces=spaces)[0]


# A token with every scope in every space, for tests about something other than authorisation.
ADMIN_TOKEN = client_token("read,write,admin,speak-for", name="admin", spaces="*")

# Fast timers (the ``test`` profile, mnemonet/profiles.py) so multi-node scenarios finish in seconds on two cores.
FAST = dict(host="127.0.0.1", port=0, cluster_key=CLUSTER_KEY, profile="test")


def fast_settings(**overrides: Any) -> Settings:
    """Test settings: loopback, free port, the test key, fast timers.

    ``Settings`` ignores names it does not know (so stray ``MNEMONET_*`` variables only warn); a test's
    misspelt override would silently test the default, so unknown names are refused here.
    """
    unknown = sorted(set(overrides) - set(Settings.model_fields))
    if unknown:
        raise TypeError(f"not settings: {', '.join(unknown)}")
    return Settings(**{**FAST, **overrides})


class InMemoryStore:
    """A MemoryAPI over dicts; a retried write with the same idempotency key is a no-op."""

    def __init__(self) -> None:
        self.observations: dict[str, ObservationView] = {}
        self.statements: dict[str, StatementView] = {}
        self.calls: list[str] = []
        self.revoked: list[str] = []
        self.audit: list[AuditView] = []
        self.askers: list[str | None] = []  # the source of each remember call

    async def observe(self, text: str, source: str = "user", *, idempotency_key: str | None = None,
                      metadata: dict[str, str] | None = None, writer: str = "") -> ObserveResult:
        self.calls.append("observe")
        if not text.strip():
            raise InvalidInput("text: must not be empty")
        obs_id = keyed_id("obs", idempotency_key, writer) if idempotency_key else new_id("obs")
        created = obs_id not in self.observations
        if not created and (self.observations[obs_id].text, self.observations[obs_id].source) != (text, source):
            raise IdempotencyConflict("idempotency_key", obs_id)  # as the service does
        if created:
            self.observations[obs_id] = ObservationView(id=obs_id, text=text, source=source,
                                                        created_at=int(time.time() * 1000), metadata=metadata or {})
        return ObserveResult(observation_id=obs_id, created=created)

    async def claim(self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
                    basis: list[str] | None = None, writer: str = "") -> ClaimResult:
        self.calls.append("claim")
        st_id = keyed_id("st", idempotency_key, writer) if idempotency_key else new_id("st")
        created = st_id not in self.statements
        if created:
            subject, _, rest = text.partition(" ")
            predicate, _, obj = rest.partition(" ")
            self.statements[st_id] = StatementView(id=st_id, subject=subject, predicate=predicate or "is",
                                                   object=obj or "?", confidence=0.9, source=source,
                                                   derived_from=basis or [])
        return ClaimResult(statement_id=st_id, created=created, statement=self.statements[st_id])

    async def recall(self, query: str) -> Recall:
        self.calls.append("recall")
        hits = [s for s in self.statements.values() if query.lower() in s.sentence().lower()]
        return Recall(query=query, statements=hits)

    async def remember(self, query: str, source: str | None = None) -> Answer:
        self.askers.append(source)
        recall = await self.recall(query)
        text = "; ".join(s.sentence() for s in recall.statements) or "nothing known"
        return Answer(query=query, text=text, cited=[s.id for s in recall.statements], recall=recall, provider="test")

    async def infer(self, observation_text: str, source: str = "user") -> list[InferredClaim]:
        return []

    async def search(self, query: str, k: int = 10, kinds: list[str] | None = None,
                     since: int | None = None) -> list[SearchHit]:
        self.calls.append("search")
        hits = [SearchHit(id=o.id, kind="observation", text=o.text, score=1.0)
                for o in self.observations.values() if query.lower() in o.text.lower()]
        return hits[:k]

    async def load(self, ids: list[str]) -> list[dict[str, Any]]:
        return [o.model_dump() for i in ids if (o := self.observations.get(i)) is not None]

    async def get_recent_observations(self, limit: int = 20) -> list[ObservationView]:
        self.calls.append("get_recent_observations")
        return list(self.observations.values())[-limit:][::-1]

    async def get_recent_statements(self, limit: int = 20) -> list[StatementView]:
        return list(self.statements.values())[-limit:][::-1]

    async def get_unresolved_contradictions(self, limit: int = 20) -> list[ContradictionView]:
        return []

    async def get_concepts(self, limit: int = 100) -> list[ConceptView]:
        return []

    async def get_concept_statements(self, name: str, limit: int = 50) -> list[StatementView]:
        return [s for s in self.statements.values() if s.subject == name][:limit]

    async def stats(self) -> dict[str, Any]:
        return {"observations": len(self.observations), "statements": len(self.statements)}

    async def clear(self) -> None:
        self.observations.clear()
        self.statements.clear()

    async def revoke_token(self, token_id: str, by: str) -> bool:
        created = token_id not in self.revoked
        if created:
            self.revoked.append(token_id)
        return created

    async def revoked_tokens(self) -> list[str]:
        return self.revoked[::-1]

    async def record_audit(self, who: str, method: str, node: str, outcome: str, detail: str,
                           spaces: list[str] | None = None) -> None:
        self.audit.append(AuditView(id=new_id("audit"), at=int(time.time() * 1000), who=who, method=method,
                                    node=node, outcome=outcome, detail=detail, spaces=spaces or []))

    async def audit_log(self, limit: int = 50, *, spaces: list[str] | None = None) -> list[AuditView]:
        kept = [a for a in self.audit if spaces is None or (a.spaces and set(a.spaces) <= set(spaces))]
        return kept[::-1][:limit]

    async def brief(self, subject: str | None = None, since: int | None = None,
                    budget: int | None = None) -> SessionBrief:
        facts = [s for s in self.statements.values() if subject is None or s.subject == subject]
        text = "\n".join(f"{s.sentence()} ({s.id})" for s in facts)
        return SessionBrief(subject=subject, since=since, text=text, budget=budget or 800, tokens=len(text) // 4)

    # -- lifecycle and spaces: what a client may call, kept minimal (one space, nothing derived) --------------
    async def retract(self, id: str, reason: str, source: str = "user", any_source: bool = False) -> RetractResult:
        kind: Literal["statement", "observation"] = "statement" if id in self.statements else "observation"
        if id not in self.statements and id not in self.observations:
            raise UnknownReference("id", [id])
        item = self.statements.get(id) or self.observations[id]
        check_may_retract(id, item.source or "", source, any_source)
        return RetractResult(retraction_id=derived_id("rt", id), target_id=id, kind=kind, created=True,
                             reason=reason, source=source, created_at=int(time.time() * 1000))

    async def forget(self, observation_id: str | None = None, source: str | None = None,
                     by: str = "local", whole_space: bool = False) -> ForgetReport:
        if whole_space:
            raise InvalidInput("space: this in-memory store holds the default space only")
        gone = [k for k, o in self.observations.items() if k == observation_id or o.source == source]
        for key in gone:
            del self.observations[key]
        return ForgetReport(kind="observation" if observation_id else "source", observations=len(gone))

    async def tombstones(self, limit: int = 50) -> list[TombstoneView]:
        return []

    async def spaces(self) -> list[SpaceView]:
        return [SpaceView(name=DEFAULT_SPACE)]

    async def create_space(self, name: str, by: str = "local") -> SpaceView:
        raise InvalidInput("name: this in-memory store holds the default space only")

    async def delete_space(self, name: str, by: str = "local") -> bool:
        raise InvalidInput("name: this in-memory store holds the default space only")

    async def share_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        raise InvalidInput("name: this in-memory store holds the default space only")

    async def unshare_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        raise InvalidInput("name: this in-memory store holds the default space only")


class HangAfterWrite:
    """Wraps a store: applies ``observe`` then never answers, as a node dying mid-request looks."""

    def __init__(self, inner: InMemoryStore) -> None:
        self._inner = inner
        self.applied = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def observe(self, text: str, source: str = "user", **kwargs: Any) -> ObserveResult:
        await self._inner.observe(text, source, **kwargs)
        self.applied.set()
        await asyncio.Event().wait()  # hangs until the node is killed
        raise AssertionError("unreachable")


async def eventually(check: Callable[[], bool], within: float, what: str, step: float = 0.05) -> float:
    """Wait until ``check()`` holds; returns the seconds it took, fails the test after ``within``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > within:
            raise AssertionError(f"not true within {within}s: {what}")
        await asyncio.sleep(step)
    return time.monotonic() - start


async def until(check: Callable[[], Awaitable[bool]], within: float, what: str, step: float = 0.1) -> float:
    """``eventually`` for an async ``check()`` (one that asks a node); polled every ``step`` seconds."""
    start = time.monotonic()
    while not await check():
        if time.monotonic() - start > within:
            raise AssertionError(f"not true within {within}s: {what}")
        await asyncio.sleep(step)
    return time.monotonic() - start


NodeFactory = Callable[..., Awaitable[PeerNode]]


@contextlib.asynccontextmanager
async def node_factory(network: Network = SOCKETS) -> AsyncIterator[NodeFactory]:
    """Start nodes on ``network`` (free local ports by default); every node still running is killed on exit."""
    nodes: list[PeerNode] = []

    async def make(capabilities: set[str] | None = None, *, seed: PeerNode | None = None,
                   providers: dict[str, object] | None = None, **overrides: Any) -> PeerNode:
        if seed is not None:
            overrides.setdefault("bootstrap", seed.url)
        node = PeerNode(fast_settings(**overrides), capabilities if capabilities is not None else {"store"},
                        providers, network=network)
        nodes.append(node)
        await node.start()
        return node

    try:
        yield make
    finally:
        # Together: each kill waits on its own HTTP server's shutdown (uvicorn polls every 0.1 s, then
        # sleeps 0.1 s), so one after the other a test's teardown cost that times its node count.
        await asyncio.gather(*(node.kill() for node in nodes if node.state in ("alive", "starting")))


def sees_all(nodes: list[PeerNode]) -> bool:
    """Every node lists every other as alive."""
    ids = {n.node_id for n in nodes}
    return all({m.node_id for m in n.membership.alive()} >= ids for n in nodes)
