"""``MnemonetStore``: LangGraph's long-term memory store (``BaseStore``) over a mnemonet network.

    from mnemonet.integrations.langgraph import MnemonetStore
    store = MnemonetStore("http://127.0.0.1:9000", token=os.environ["MNEMONET_TOKEN"])
    graph = builder.compile(store=store)          # nodes get it as ``store`` (or ``get_store()``)

How LangGraph's model maps onto mnemonet's:

- an item ``(namespace, key) -> value`` is an observation of the store's memory ``space``: its text
  is what the value says (``text_fields``, else the value as JSON), so ``remember`` and the workers
  read it like anything said; namespace, key and the exact value ride in its metadata;
- ``put`` appends a version: the observation with idempotency key (namespace, key, version n+1). The
  ids derive from the keys and the token's name (keys are scoped by the token that writes them), so
  ``get`` loads the versions by id and returns the newest; a concurrent ``put`` of the same version
  through the same token is a conflict, and the loser takes the next one. Earlier versions stay (the
  memory keeps what changed). The items are the token's: another token's store over the same space
  keeps its own (both are one memory to ``remember`` and the workers);
- ``delete`` is ``retract`` of every version ("deleted through the LangGraph store"): the memory is
  append-only, so the text stays in the history, never current again, never a search hit; ``forget``
  (admin) is what erases. A ``put`` after a ``delete`` starts a new item;
- ``search`` with a ``query`` is mnemonet's hybrid search (vector + keyword) over the space's
  observations, kept to the namespace prefix, the newest version of each key and ``filter``; without
  one, and ``list_namespaces``, read the space's newest ``scan_limit`` observations;
- the speaker of each item is the token's name, or ``source(namespace)`` when given (e.g.
  ``lambda ns: ns[1]`` for ``("users", "alice", ...)``; the token then needs ``speak-for``).

TTL is not supported (``supports_ttl`` is False): memories do not expire. ``index=False`` on a ``put`` is
accepted, but every observation is searchable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Coroutine, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("MnemonetStore needs LangGraph: pip install 'mnemonet[langgraph]'") from exc

from mnemonet.integrations.fields import get_json, put_json
from mnemonet.integrations.keyed import SEARCH_MAX_K, Numbered, load_all, load_run
from mnemonet.integrations.runner import LoopThread
from mnemonet.model.errors import Conflict, MnemonetError
from mnemonet.p2p.client import HttpMemoryClient

T = TypeVar("T")

NAMESPACE_KEY, ITEM_KEY, VALUE_PREFIX = "lg_ns", "lg_key", "lg_v"
VALUE_PIECES = 17  # metadata holds 20 entries: namespace, key and the value's pieces
TEXT_FIELDS = ("text", "content", "memory", "data")
DELETE_REASON = "deleted through the LangGraph store"


def _ms_time(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


def _check_namespace(namespace: tuple[str, ...]) -> None:
    # LangGraph's own rules (InMemoryStore): non-empty labels without dots, not rooted at "langgraph".
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(f"Namespace labels must be non-empty strings without periods: {namespace!r}")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph": {namespace!r}')


def _matches(value: Any, condition: Any) -> bool:
    """LangGraph's filter semantics: equality, or a mapping of $eq/$ne/$gt/$gte/$lt/$lte."""
    if isinstance(condition, dict) and condition and all(str(k).startswith("$") for k in condition):
        tests: dict[str, Callable[[Any, Any], bool]] = {
            "$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
            "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}
        try:
            return all(tests[op](value, operand) for op, operand in condition.items())
        except (KeyError, TypeError):
            return False
    return bool(value == condition)


def _passes(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    return all(_matches(value.get(field), condition) for field, condition in (filter or {}).items())


def _namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(want == "*" or want == got for want, got in zip(path, part, strict=True))


class MnemonetStore(BaseStore):
    """LangGraph ``BaseStore`` over one node's HTTP API (see the module docstring for the mapping).

    ``url`` may list several nodes (comma-separated or a list: the next is tried when one does not
    answer); ``token`` is a client token with ``read`` and ``write``. Call ``close()`` when done (or use
    ``with``): it closes the HTTP connections and the store's event-loop thread.
    """

    supports_ttl = False

    def __init__(
        self, url: str | Sequence[str], token: str = "", *, space: str = "default",
        source: Callable[[tuple[str, ...]], str] | None = None, text_fields: Sequence[str] = TEXT_FIELDS,
        scan_limit: int = SEARCH_MAX_K, search_candidates: int = 50, timeout: float = 120.0,
    ) -> None:
        self.space = space
        self._source = source
        self._text_fields = tuple(text_fields)
        self._scan_limit = scan_limit
        self._candidates = search_candidates
        urls = url.split(",") if isinstance(url, str) else list(url)
        self._runner = LoopThread("mnemonet-langgraph-store")
        self._client: HttpMemoryClient = self._runner.run(lambda: self._make_client(urls, token, timeout))

    @staticmethod
    async def _make_client(urls: list[str], token: str, timeout: float) -> HttpMemoryClient:
        return HttpMemoryClient(urls, token, timeout=timeout)  # made on the store's loop, which it belongs to

    def close(self) -> None:
        """Close the connections and stop the store's loop."""
        self._runner.close(self._client.aclose)

    def __enter__(self) -> MnemonetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore ---------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order and return their results (``BaseStore.batch``)."""
        return self._runner.run(self._batch_factory(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order and return their results (``BaseStore.abatch``)."""
        return await self._runner.arun(self._batch_factory(list(ops)))

    def _batch_factory(self, ops: list[Op]) -> Callable[[], Coroutine[Any, Any, list[Result]]]:
        async def run() -> list[Result]:
            # In order: a get after a put of the same batch reads that put, as LangGraph's stores do.
            return [await self._one(op) for op in ops]

        return run

    async def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            _check_namespace(op.namespace)
            if op.value is None:
                await self._delete(op.namespace, op.key)
            else:
                await self._put(op.namespace, op.key, dict(op.value))
            return None
        if isinstance(op, SearchOp):
            return await self._search(op)
        if isinstance(op, ListNamespacesOp):
            return await self._list_namespaces(op)
        raise ValueError(f"unknown store operation: {type(op).__name__}")

    # -- items -------------------------------------------------------------------

    @staticmethod
    def _idempotency_key(namespace: tuple[str, ...], key: str, version: int) -> str:
        digest = hashlib.sha256(json.dumps([list(namespace), key, version]).encode()).hexdigest()
        return f"langgraph:{digest}"

    async def _versions(self, namespace: tuple[str, ...], key: str) -> list[Numbered]:
        """Every stored version of the item, oldest first (they are numbered from 1 without a gap)."""
        return await load_run(self._client, lambda n: self._idempotency_key(namespace, key, n), self.space)

    def _item(self, namespace: tuple[str, ...], key: str, versions: list[Numbered]) -> Item | None:
        """The item as it stands: the newest version, created when its run of live versions began."""
        if not versions or versions[-1].retracted:
            return None
        first = versions[-1]
        for version in reversed(versions):
            if version.retracted:
                break
            first = version
        newest = versions[-1].observation
        return Item(value=get_json(newest.get("metadata", {}), VALUE_PREFIX), key=key, namespace=namespace,
                    created_at=_ms_time(first.observation["created_at"]), updated_at=_ms_time(newest["created_at"]))

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        return self._item(namespace, key, await self._versions(namespace, key))

    def _text(self, value: dict[str, Any]) -> str:
        said = [str(value[f]) for f in self._text_fields if isinstance(value.get(f), str | int | float) and
                str(value[f]).strip()]
        return "\n".join(said) if said else json.dumps(value, ensure_ascii=False, sort_keys=True)

    async def _put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        metadata: dict[str, str] = {}
        put_json(metadata, NAMESPACE_KEY, list(namespace), 1)
        put_json(metadata, ITEM_KEY, key, 1)
        put_json(metadata, VALUE_PREFIX, value, VALUE_PIECES)
        source = self._source(namespace) if self._source is not None else None
        version = len(await self._versions(namespace, key)) + 1
        while True:
            try:
                await self._client.observe(self._text(value), source, metadata=metadata, space=self.space,
                                           idempotency_key=self._idempotency_key(namespace, key, version))
                return
            except MnemonetError as exc:  # over HTTP a conflict arrives with its wire code
                if exc.code != Conflict.code:
                    raise
                version += 1  # another writer took this version with other content: take the next one

    async def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        source = self._source(namespace) if self._source is not None else None
        for version in await self._versions(namespace, key):
            if not version.retracted:
                await self._client.retract(version.observation["id"], DELETE_REASON, source, space=self.space)

    # -- search and namespaces ---------------------------------------------------

    @staticmethod
    def _address(observation: dict[str, Any]) -> tuple[tuple[str, ...], str] | None:
        """(namespace, key) of an observation this store wrote; None for any other observation."""
        metadata = observation.get("metadata") or {}
        try:
            return tuple(get_json(metadata, NAMESPACE_KEY)), str(get_json(metadata, ITEM_KEY))
        except (KeyError, ValueError):
            return None

    async def _current(self, observations: list[dict[str, Any]], prefix: tuple[str, ...]) -> list[Item]:
        """The items these observations are the newest live versions of, under ``prefix``, in the given order."""
        out: list[Item] = []
        items: dict[tuple[tuple[str, ...], str], Item | None] = {}
        for observation in observations:
            address = self._address(observation)
            if address is None or address[0][:len(prefix)] != prefix:
                continue
            if address not in items:
                items[address] = self._item(*address, await self._versions(*address))
            item = items[address]
            # An older version's observation is no item: the newest one stands for its key, where it matches.
            if item is not None and item.updated_at == _ms_time(observation["created_at"]):
                out.append(item)
                items[address] = None  # once
        return out

    async def _recent(self) -> list[dict[str, Any]]:
        recent = await self._client.get_recent_observations(self._scan_limit, space=self.space)
        return [o.model_dump() for o in recent]

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        wanted = op.offset + op.limit
        if op.query:
            k = min(max(self._candidates, wanted * 4), SEARCH_MAX_K)
            hits = await self._client.search(op.query, k=k, kinds=["observation"], space=self.space)
            scores = {h.id: h.score for h in hits}
            loaded = await load_all(self._client, [h.id for h in hits], self.space)
            order = {h.id: n for n, h in enumerate(hits)}
            observations = sorted((o for o in loaded if o.get("kind") == "observation"),
                                  key=lambda o: order.get(o["id"], len(order)))
        else:
            scores, observations = {}, await self._recent()
        current = await self._current(observations, tuple(op.namespace_prefix))
        items = [i for i in current if _passes(i.value, op.filter)]
        chosen = items[op.offset:wanted]
        return [SearchItem(namespace=i.namespace, key=i.key, value=i.value, created_at=i.created_at,
                           updated_at=i.updated_at, score=self._score(i, observations, scores) if op.query else None)
                for i in chosen]

    def _score(self, item: Item, observations: list[dict[str, Any]], scores: dict[str, float]) -> float | None:
        for observation in observations:
            if self._address(observation) == (item.namespace, item.key) and \
                    _ms_time(observation["created_at"]) == item.updated_at:
                return scores.get(observation["id"])
        return None

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces: set[tuple[str, ...]] = set()
        for item in await self._current(await self._recent(), ()):
            namespace = item.namespace
            if op.match_conditions and not all(_namespace_matches(namespace, c) for c in op.match_conditions):
                continue
            namespaces.add(namespace[:op.max_depth] if op.max_depth is not None else namespace)
        return sorted(namespaces)[op.offset:op.offset + op.limit]
