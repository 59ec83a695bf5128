"""Clients that satisfy the shared interfaces over the network.

- ``P2PMemoryClient``: ``MemoryAPI`` through a running ``PeerNode`` (local if it can, else routed).
- ``RemoteLanguageModel`` / ``RemoteEmbedder``: thin proxies to llm / embed peers, for store
  nodes that lack those capabilities.
- ``HttpMemoryClient``: ``MemoryAPI`` over one node's client HTTP API, for programs that are not peers.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import httpx

from mnemonet.embed.base import EmbedKind
from mnemonet.llm.base import CandidatePair, Extraction, PairJudgement, ParsedClaim, Triple, WrittenAnswer
from mnemonet.model.api import (
    Answer,
    ClaimResult,
    ConsolidationWork,
    ForgetReport,
    ImportReport,
    InferredClaim,
    LinkKind,
    ObserveResult,
    PredicateProfile,
    Recall,
    RetractResult,
)
from mnemonet.model.brief import SessionBrief
from mnemonet.model.spaces import SpaceView
from mnemonet.model.views import (
    AuditView,
    ConceptView,
    ContradictionView,
    ObservationView,
    SearchHit,
    StatementView,
    TombstoneView,
    WriteResult,
)
from mnemonet.p2p.errors import Busy, ModelUnavailable, NoCapablePeer, P2PError, RequestTimeout, error_from_wire
from mnemonet.p2p.methods import method_spec
from mnemonet.p2p.tokens import claimed_name


class NodeCalls(Protocol):
    """What the network proxies need from the node they run on: route one call (``PeerNode.call``)."""

    async def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        """Run an allowed method here or on a capable peer."""
        ...


class ClientNode(NodeCalls, Protocol):
    """What ``P2PMemoryClient`` needs: routed calls, and the counters of the node's own workers."""

    def worker_stats(self) -> list[dict[str, Any]]:
        """Each worker's name and counters."""
        ...


def _drop_none(**kwargs: Any) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


class _MemoryMethods:
    """The MemoryAPI surface over one ``_call(method, kwargs)``; writes always carry an idempotency key."""

    async def _call(self, method: str, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    async def _scall(self, space: str | None, method: str, kwargs: dict[str, Any]) -> Any:
        # No space sent: the server's default (the token's first space, or ``default``).
        return await self._call(method, kwargs if space is None else {**kwargs, "space": space})

    async def observe(
        self, text: str, source: str = "user", *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None, space: str | None = None, defer_extraction: bool = False,
        writer: str = "",
    ) -> ObserveResult:
        """Record an observation; retried on another peer under the same idempotency key."""
        key = idempotency_key or uuid.uuid4().hex
        # Sent only when asked, so a call without it still reaches a node from before the argument.
        return await self._scall(space, "observe",
            _drop_none(text=text, source=source, idempotency_key=key, metadata=metadata,
                       defer_extraction=defer_extraction or None, writer=writer or None))

    async def claim(
        self, text: str, source: str = "agent", *, idempotency_key: str | None = None,
        basis: list[str] | None = None, space: str | None = None, writer: str = "",
    ) -> ClaimResult:
        """Assert a claim; retried on another peer under the same idempotency key."""
        key = idempotency_key or uuid.uuid4().hex
        return await self._scall(space, "claim", _drop_none(text=text, source=source, idempotency_key=key, basis=basis,
                                                            writer=writer or None))

    async def import_file(
        self, content: str, format: Literal["jsonl", "locomo", "chat"] = "jsonl", *, text_field: str = "text",
        source_field: str = "source", default_source: str = "import", as_source: str | None = None,
        space: str | None = None, defer_extraction: bool = False, writer: str = "",
    ) -> ImportReport:
        """Import a file's text, each line under its import key (a retried call writes nothing twice)."""
        return await self._scall(space, "import_file", _drop_none(
            content=content, format=format, text_field=text_field, source_field=source_field,
            default_source=default_source, as_source=as_source, defer_extraction=defer_extraction or None,
            writer=writer or None))

    async def retract(self, id: str, reason: str, source: str = "user", *, space: str | None = None,
                      any_source: bool = False) -> RetractResult:
        """Take a statement or observation back (a retry finds the standing retraction); ``any_source``: another
        source's too (an admin; over HTTP the node decides it from the token)."""
        kwargs = {"id": id, "reason": reason, "source": source, **({"any_source": True} if any_source else {})}
        return await self._scall(space, "retract", kwargs)

    async def forget(
        self, observation_id: str | None = None, source: str | None = None, by: str = "local", *,
        whole_space: bool = False, space: str | None = None
    ) -> ForgetReport:
        """Admin: erase an observation, all a source wrote, or (``whole_space``) the space itself (over HTTP,
        ``by`` is the token's name)."""
        kwargs = _drop_none(observation_id=observation_id, source=source, by=by)
        return await self._scall(space, "forget", {**kwargs, "whole_space": True} if whole_space else kwargs)

    async def tombstones(self, limit: int = 50, *, space: str | None = None) -> list[TombstoneView]:
        """Admin: tombstones of erasures, newest first."""
        return await self._scall(space, "tombstones", {"limit": limit})

    async def remember(self, query: str, source: str | None = None, *, space: str | None = None) -> Answer:
        """Answer ``query`` from memory; ``source`` is the asker ("you" in the answer)."""
        return await self._scall(space, "remember", _drop_none(query=query, source=source))

    async def recall(self, query: str, *, space: str | None = None) -> Recall:
        """The resolved statements behind ``remember``."""
        return await self._scall(space, "recall", {"query": query})

    async def brief(
        self, subject: str | None = None, since: int | None = None, budget: int | None = None, *,
        space: str | None = None,
    ) -> SessionBrief:
        """What a new agent session should know, within a token budget."""
        return await self._scall(space, "brief", _drop_none(subject=subject, since=since, budget=budget))

    async def infer(
        self, observation_text: str, source: str = "user", *, space: str | None = None
    ) -> list[InferredClaim]:
        """Claims a language model infers from an observation ``source`` made."""
        return await self._scall(space, "infer", {"observation_text": observation_text, "source": source})

    async def search(
        self, query: str, k: int = 10, kinds: list[str] | None = None, since: int | None = None,
        *, space: str | None = None
    ) -> list[SearchHit]:
        """Hybrid search."""
        return await self._scall(space, "search", _drop_none(query=query, k=k, kinds=kinds, since=since))

    async def load(self, ids: list[str], *, space: str | None = None) -> list[dict[str, Any]]:
        """Full items for ids."""
        return await self._scall(space, "load", {"ids": ids})

    async def get_recent_observations(self, limit: int = 20, *, space: str | None = None) -> list[ObservationView]:
        """Newest observations."""
        return await self._scall(space, "get_recent_observations", {"limit": limit})

    async def get_recent_statements(self, limit: int = 20, *, space: str | None = None) -> list[StatementView]:
        """Newest statements."""
        return await self._scall(space, "get_recent_statements", {"limit": limit})

    async def get_unresolved_contradictions(
        self, limit: int = 20, *, space: str | None = None
    ) -> list[ContradictionView]:
        """Open contradictions."""
        return await self._scall(space, "get_unresolved_contradictions", {"limit": limit})

    async def get_concepts(self, limit: int = 100, *, space: str | None = None) -> list[ConceptView]:
        """Known concepts."""
        return await self._scall(space, "get_concepts", {"limit": limit})

    async def get_concept_statements(
        self, name: str, limit: int = 50, *, space: str | None = None
    ) -> list[StatementView]:
        """Statements about one concept."""
        return await self._scall(space, "get_concept_statements", {"name": name, "limit": limit})

    async def stats(self, *, space: str | None = None) -> dict[str, Any]:
        """Store counters."""
        return await self._scall(space, "stats", {})

    async def clear(self, *, space: str | None = None) -> None:
        """Admin: delete everything."""
        await self._scall(space, "clear", {})

    async def revoke_token(self, token_id: str, by: str) -> bool:
        """Admin: revoke a client token on every node; False if it was revoked already."""
        return await self._call("revoke_token", {"token_id": token_id, "by": by})

    async def revoked_tokens(self) -> list[str]:
        """Admin: ids of revoked client tokens, newest first."""
        return await self._call("revoked_tokens", {})

    async def audit_log(self, limit: int = 50, *, spaces: list[str] | None = None) -> list[AuditView]:
        """Admin: audit records of client write and admin calls, newest first (over HTTP, those of the token's
        spaces)."""
        return await self._call("audit_log", _drop_none(limit=limit, spaces=spaces))

    async def spaces(self) -> list[SpaceView]:
        """Every memory space, ``default`` first."""
        return await self._call("spaces", {})

    async def create_space(self, name: str, by: str = "local") -> SpaceView:
        """Admin: create a memory space (an existing one is returned unchanged)."""
        return await self._call("create_space", {"name": name, "by": by})

    async def delete_space(self, name: str, by: str = "local") -> bool:
        """Admin: delete a memory space and everything in it; False if there was none."""
        return await self._call("delete_space", {"name": name, "by": by})

    async def share_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        """Admin: let space ``name`` read space ``reads`` (read-only, not transitive)."""
        return await self._call("share_space", {"name": name, "reads": reads, "by": by})

    async def unshare_space(self, name: str, reads: str, by: str = "local") -> SpaceView:
        """Admin: stop space ``name`` reading space ``reads``."""
        return await self._call("unshare_space", {"name": name, "reads": reads, "by": by})

    async def record_inference(
        self, observation_id: str, claims: list[InferredClaim], source: str, *, space: str | None = None
    ) -> WriteResult:
        """A worker's claims about an observation plus its done-marker; a repeat is absorbed by the store."""
        return await self._scall(space, 
            "record_inference", {"observation_id": observation_id, "claims": claims, "source": source})

    async def pending_observations(
        self, source: str, limit: int = 100, *, space: str | None = None
    ) -> list[ObservationView]:
        """Observations the worker ``source`` has not processed yet."""
        return await self._scall(space, "pending_observations", {"source": source, "limit": limit})

    async def pending_statements(
        self, source: str, limit: int = 100, *, space: str | None = None
    ) -> list[StatementView]:
        """Statements the worker ``source`` has not marked processed yet."""
        return await self._scall(space, "pending_statements", {"source": source, "limit": limit})

    async def pending_extractions(self, limit: int = 100, *, space: str | None = None) -> list[ObservationView]:
        """Observations kept without a model, waiting for their extraction."""
        return await self._scall(space, "pending_extractions", {"limit": limit})

    async def complete_extraction(self, observation_id: str, *, space: str | None = None) -> ObserveResult:
        """Extract a pending observation on the store node, exactly once."""
        return await self._scall(space, "complete_extraction", {"observation_id": observation_id})

    async def predicate_profile(
        self, predicate: str, exclude: list[str], *, space: str | None = None
    ) -> PredicateProfile:
        """A predicate's remembered cardinality and current values."""
        return await self._scall(space, "predicate_profile", {"predicate": predicate, "exclude": exclude})

    async def record_predicate(
        self, predicate: str, cardinality: str, decided_by: str, *, space: str | None = None
    ) -> PredicateProfile:
        """Remember a predicate's cardinality once."""
        return await self._scall(space, "record_predicate", {"predicate": predicate, "cardinality": cardinality,
                                                     "decided_by": decided_by})

    async def mark_processed(self, source: str, ids: list[str], *, space: str | None = None) -> int:
        """Mark statements processed by ``source``."""
        return await self._scall(space, "mark_processed", {"source": source, "ids": ids})

    async def link_statements(
        self, kind: LinkKind, from_id: str, to_id: str, reason: str, source: str, *, space: str | None = None
    ) -> bool:
        """SUPERSEDES/CONTRADICTS between existing statements; idempotent."""
        return await self._scall(space, "link_statements", {"kind": kind, "from_id": from_id, "to_id": to_id,
                                                    "reason": reason, "source": source})

    async def pending_consolidation(
        self, source: str, min_new: int, limit: int = 10, *, space: str | None = None
    ) -> list[ConsolidationWork]:
        """Concepts due a summary by ``source``."""
        return await self._scall(space, "pending_consolidation", {"source": source, "min_new": min_new, "limit": limit})

    async def record_summary(
        self, concept_id: str, text: str, derived_from: list[str], source: str, *, space: str | None = None
    ) -> WriteResult:
        """A summary statement about a concept; idempotent."""
        return await self._scall(space, "record_summary", {"concept_id": concept_id, "text": text,
                                                   "derived_from": derived_from, "source": source})


class P2PMemoryClient(_MemoryMethods):
    """``MemoryAPI`` through a peer node: served locally when it has ``store``, else routed with failover."""

    def __init__(self, node: ClientNode) -> None:
        self._node = node

    async def _call(self, method: str, kwargs: dict[str, Any]) -> Any:
        return await self._node.call(method, kwargs)

    async def stats(self, *, space: str | None = None) -> dict[str, Any]:
        """Store counters, plus the counters of this node's own workers."""
        result = await self._scall(space, "stats", {})
        workers = self._node.worker_stats()
        return {**result, "workers": workers} if workers else result


class RemoteLanguageModel:
    """``LanguageModel`` served by an llm peer."""

    def __init__(self, node: NodeCalls) -> None:
        self._node = node

    @property
    def name(self) -> str:
        """Shown to users."""
        return "remote (llm peer)"

    async def _call(self, method: str, args: dict[str, Any]) -> Any:
        try:
            return await self._node.call(method, args)
        except (NoCapablePeer, Busy, RequestTimeout) as exc:
            raise ModelUnavailable(exc) from exc
        except P2PError as exc:
            if exc.code == "model_unavailable":
                raise ModelUnavailable(exc) from exc
            raise

    async def extract_observation(
        self, text: str, source: str, said_at: int | None = None, infer: bool = False
    ) -> Extraction:
        """See ``LanguageModel``."""
        return await self._call("llm.extract_observation",
                                _drop_none(text=text, source=source, said_at=said_at, infer=infer or None))

    async def parse_claim(self, text: str, source: str) -> ParsedClaim:
        """See ``LanguageModel``."""
        return await self._call("llm.parse_claim", {"text": text, "source": source})

    async def answer(self, query: str, memory: list[tuple[str, str]]) -> WrittenAnswer:
        """See ``LanguageModel``."""
        return await self._call("llm.answer", {"query": query, "memory": memory})

    async def infer_claims(self, observation_text: str, source: str = "user") -> list[Triple]:
        """See ``LanguageModel``."""
        return await self._call("llm.infer_claims", {"observation_text": observation_text, "source": source})

    async def judge_pairs(self, pairs: list[CandidatePair]) -> list[PairJudgement]:
        """See ``LanguageModel``."""
        return await self._call("llm.judge_pairs", {"pairs": pairs})

    async def summarise(self, concept: str, statements: list[str], previous: str | None) -> str:
        """See ``LanguageModel``."""
        return await self._call(
            "llm.summarise", {"concept": concept, "statements": statements, "previous": previous})

    async def predicate_cardinality(self, predicate: str, examples: list[str]) -> str:
        """See ``LanguageModel``."""
        return await self._call("llm.predicate_cardinality", {"predicate": predicate, "examples": examples})

    def usage(self) -> dict[str, int]:
        """Counted on the llm peer, not here."""
        return {}


class RemoteEmbedder:
    """``Embedder`` served by embed peers; large inputs go in ``batch_size`` requests."""

    def __init__(self, node: NodeCalls, model: str, dimension: int, batch_size: int = 64) -> None:
        self._node = node
        self._model = model
        self._dimension = dimension
        self._batch_size = max(1, batch_size)

    @property
    def model(self) -> str:
        """The embed peers' model name (the cluster shares one embedding configuration)."""
        return self._model

    @property
    def dimension(self) -> int:
        """Vector dimension."""
        return self._dimension

    @property
    def query_takes_all_cores(self) -> bool:
        """On an embed peer: its cores are not this node's (or not only), so never."""
        return False

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> list[list[float]]:
        """Embed ``texts`` on an embed peer, batch by batch so no envelope grows past the size limit."""
        texts = list(texts)
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start:start + self._batch_size]
            vectors = await self._node.call("embed.embed", {"texts": batch, "kind": kind})
            if len(vectors) != len(batch) or any(len(v) != self._dimension for v in vectors):
                raise ValueError(f"embed peer returned {len(vectors)} vectors of the wrong shape for {len(batch)} "
                    "texts")
            out.extend(vectors)
        return out


class HttpMemoryClient(_MemoryMethods):
    """``MemoryAPI`` over the ``POST /v1/{method}`` of one or several nodes with a client token; ``async with``.

    With several URLs a call that gets no answer from one node (refused connection, timeout, dropped
    connection) is made on the next, and later calls start from the node that answered. Writes carry
    their idempotency key to every node tried, so a retry never writes twice. Worker-internal methods
    are not served to clients: calling them here raises ``UnknownMethod``.

    ``writer`` is the name the token claims: the node scopes this client's idempotency keys by it (by the
    verified name, the same for a valid token), so ``model.ids.observation_id(key, space, client.writer)``
    is the id of what this client wrote under ``key``. Empty without a token: a keyless node's keys are
    unscoped.
    """

    def __init__(self, base_url: str | Sequence[str], token: str = "", *, timeout: float = 120.0,
                 on_refused: Callable[[str], None] | None = None) -> None:
        # ``on_refused``: told why whenever a node refuses the token (401), e.g. to end a session built on it.
        self._on_refused = on_refused
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        self._urls = [u.strip().rstrip("/") for u in urls if u.strip()]
        if not self._urls:
            raise ValueError("HttpMemoryClient needs at least one node URL")
        self._first = 0  # index of the node that answered last
        self.writer = (claimed_name(token) or "") if token else ""
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout)

    async def __aenter__(self) -> HttpMemoryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._http.aclose()

    async def observe(
        self, text: str, source: str | None = None, *, idempotency_key: str | None = None,
        metadata: dict[str, str] | None = None, space: str | None = None, defer_extraction: bool = False,
        writer: str = "",
    ) -> ObserveResult:
        """Record an observation; the source is the token's name unless ``source`` (speak-for) says otherwise.
        The key's ``writer`` is the token's name, set by the node (``self.writer``): nothing else is sent."""
        key = idempotency_key or uuid.uuid4().hex
        return await self._scall(space, "observe",
            _drop_none(text=text, source=source, idempotency_key=key, metadata=metadata,
                       defer_extraction=defer_extraction or None))

    async def claim(
        self, text: str, source: str | None = None, *, idempotency_key: str | None = None,
        basis: list[str] | None = None, space: str | None = None, writer: str = "",
    ) -> ClaimResult:
        """Assert a claim; the source is the token's name unless ``source`` (speak-for) says otherwise, the key's
        ``writer`` the token's name (as for ``observe``)."""
        key = idempotency_key or uuid.uuid4().hex
        return await self._scall(space, "claim", _drop_none(text=text, source=source, idempotency_key=key, basis=basis))

    async def retract(
        self, id: str, reason: str, source: str | None = None, *, space: str | None = None, any_source: bool = False
    ) -> RetractResult:
        """Take a statement or observation back; the source is the token's name unless ``source`` (speak-for).
        Another source's item only with an admin token of the space (the node decides ``any_source`` from it)."""
        return await self._scall(space, "retract", _drop_none(id=id, reason=reason, source=source))

    async def _call(self, method: str, kwargs: dict[str, Any]) -> Any:
        spec = method_spec(method)
        resp = await self._post(method, kwargs)
        try:
            body = resp.json()
        except ValueError:
            raise error_from_wire("http_error", f"HTTP {resp.status_code}: {resp.text[:200]}") from None
        if resp.status_code != 200 or "error" in body:
            err = body.get("error") or {}
            code, message = str(err.get("code", "http_error")), str(err.get("message", resp.status_code))
            if resp.status_code == 401:  # say whose fault it is: the credential, not the network
                if self._on_refused is not None:
                    self._on_refused(message)
                message = f"the node refused our token (401 {code}): {message}"
            raise error_from_wire(code, message)
        return spec.load_result(body.get("result"))

    async def _post(self, method: str, kwargs: dict[str, Any]) -> httpx.Response:
        failures: list[str] = []
        for step in range(len(self._urls)):
            index = (self._first + step) % len(self._urls)
            url = self._urls[index]
            try:
                resp = await self._http.post(f"{url}/v1/{method}", json=kwargs)
            except httpx.TransportError as exc:
                failures.append(f"no node at {url} ({type(exc).__name__}: {exc or 'no answer'})")
                continue
            self._first = index
            return resp
        raise NoCapablePeer("; ".join(failures))
