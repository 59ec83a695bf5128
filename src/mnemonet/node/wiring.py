"""Builds a node's local providers on first use: language model, embedder, memory service.

A capability the node has is served by a local provider (given, or built
here from the settings); one it lacks is reached through a p2p proxy, so the
memory service of a store-only node asks llm and embed peers.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from typing import TYPE_CHECKING, Any

from mnemonet.settings import Settings

if TYPE_CHECKING:
    from mnemonet.node.peer_node import PeerNode

log = logging.getLogger(__name__)

PROVIDED = ("store", "llm", "embed")


def build_workers(node: PeerNode) -> list[Any]:
    """One worker per worker capability of the node, on its ``P2PMemoryClient`` and an llm proxy.

    Ownership is rendezvous hashing over the live members with the same capability,
    read at each decision; write events wake the workers, polling catches up.
    """
    from mnemonet.agents import WORKER_CAPABILITIES, Ownership, make_worker
    from mnemonet.p2p.client import RemoteLanguageModel

    workers = []
    for capability in WORKER_CAPABILITIES:
        if capability not in node.capabilities:
            continue

        def live(capability: str = capability) -> list[str]:  # bound now: the loop moves on
            return [m.node_id for m in node.membership.alive(capability)]

        ownership = Ownership(node.node_id, live)
        workers.append(make_worker(capability, node.client, RemoteLanguageModel(node), node.settings, ownership,
                                   node.events.subscribe))
    return workers


class LocalProviders:
    """The providers behind this node's ``store``/``llm``/``embed`` capabilities, built lazily once."""

    def __init__(
        self, settings: Settings, capabilities: frozenset[str], given: dict[str, object], node: PeerNode
    ) -> None:
        unknown = set(given) - set(PROVIDED)
        if unknown:
            raise ValueError(f"providers: unknown capabilities {sorted(unknown)} (expected {list(PROVIDED)})")
        self._settings = settings
        self._capabilities = capabilities
        self._node = node
        self._ready: dict[str, object] = dict(given)
        if "store" in given:
            self._ready["store"] = self._serving(_with_spaces(given["store"]))
        self._built: list[str] = []
        self._failed: dict[str, str] = {}
        self._builds: dict[str, asyncio.Task[object]] = {}  # builds under way, one per capability
        self.store_ready = asyncio.Event()  # set once the store is open: the vector sync waits for it
        if "store" in given:
            self.store_ready.set()

    def has(self, capability: str) -> bool:
        """True if this node serves ``capability`` itself."""
        return capability in self._capabilities and capability in PROVIDED

    async def get(self, capability: str) -> object:
        """The local provider for ``capability``, built on first use."""
        if not self.has(capability):
            raise LookupError(f"this node has no {capability!r} capability")
        provider = self._ready.get(capability)
        if provider is not None:
            return provider
        build = self._builds.get(capability)
        if build is None:
            build = self._builds[capability] = asyncio.create_task(self._build_once(capability),
                                                                   name=f"build-{capability}")
            # Its failure is recorded in states() and raised to the callers still waiting; none may be.
            build.add_done_callback(lambda t: t.cancelled() or t.exception())
        # Shielded: a caller that gives up (a cancelled warm-up at stop, a timed-out request) must not
        # cancel a half-opened store, which would keep its servers and the data directory's lock.
        return await asyncio.shield(build)

    async def _build_once(self, capability: str) -> object:
        try:
            self._ready[capability] = await self._build(capability)
        except Exception as exc:
            self._failed[capability] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._builds.pop(capability, None)  # done either way: a failed build is tried again on the next call
        self._failed.pop(capability, None)
        self._built.append(capability)
        log.info("built local %s provider", capability)
        if capability == "store":
            self.store_ready.set()
        return self._ready[capability]

    async def serving(self, method: str, capability: str) -> object:
        """The object whose attribute serves ``method``: the provider of ``capability``, but for ``infer``.

        ``infer`` (an llm method) is answered by the store where this node has one,
        and from the language model's triples alone where it has none.
        """
        if method != "infer":
            return await self.get(capability)
        if self.has("store"):
            return await self.get("store")
        from mnemonet.llm.inference import ModelInference

        return ModelInference(await self.get("llm"))  # type: ignore[arg-type]  # get() is untyped: object

    def ready(self, capability: str) -> object | None:
        """The local provider for ``capability`` if it is built (or was given); never builds it."""
        return self._ready.get(capability) if self.has(capability) else None

    async def warm_up(self) -> None:
        """Open the store and load the models this node serves, in the background, as soon as it serves.

        A restarted store node answers pings and joins at once; the first call
        that needs a provider would otherwise pay for the heavy imports and the
        model loads itself (tests/faults/README.md). The providers warm up side
        by side: loading the offline model's pipeline is the longest part and
        overlaps opening the store. Calls arriving meanwhile wait for the same
        build (one lock per capability). A failure is logged and recorded in
        ``states()``; the next call tries again.
        """
        await asyncio.gather(*(self._warm(cap) for cap in PROVIDED if self.has(cap)))

    async def _warm(self, capability: str) -> None:
        try:
            provider = await self.get(capability)
            warm = getattr(provider, "warm_up", None)
            if callable(warm):
                started = time.monotonic()
                await warm()
                log.info("warmed up the %s provider in %.2fs", capability, time.monotonic() - started)
        except Exception as exc:  # recorded in states(); /health and the next call report it
            log.warning("warming up the %s provider failed: %s", capability, exc)

    async def _build(self, capability: str) -> Any:
        if capability == "llm":
            from mnemonet.llm.factory import make_language_model

            return make_language_model(self._settings)
        if capability == "embed":
            from mnemonet.embed import make_node_embedder

            # One provider call for the texts of concurrent writes (local ones and embed RPCs from peers).
            return make_node_embedder(self._settings)
        # Importing the service and the database drivers takes seconds on a loaded machine (2.6 s at
        # load 10, measured with py-spy): done on a thread, so the event loop keeps answering pings.
        await asyncio.to_thread(importlib.import_module, "mnemonet.service")
        from mnemonet.service import SpacedMemory, build_memory_service

        return self._serving(SpacedMemory(await build_memory_service(self._settings, await self._llm(),
                                                                      await self._embedder())))

    def _serving(self, store: object) -> object:
        """The store told whether an inference worker runs (``infer_with_extraction: auto``): a live member
        with the capability, this node included, read at each extraction."""
        from mnemonet.service import SpacedMemory

        if isinstance(store, SpacedMemory):
            store.default.inference_runs = lambda: self._node.runs("inference")
        return store

    async def _llm(self) -> Any:
        if self.has("llm"):
            return await self.get("llm")
        from mnemonet.p2p.client import RemoteLanguageModel

        return RemoteLanguageModel(self._node)

    async def _embedder(self) -> Any:
        if self.has("embed"):
            return await self.get("embed")
        from mnemonet.embed import make_embedder
        from mnemonet.p2p.client import RemoteEmbedder

        # The cluster shares one embedding configuration; the local one names model and dimension
        # (constructing it loads nothing).
        local = make_embedder(self._settings)
        return RemoteEmbedder(self._node, local.model, local.dimension, self._settings.embed_batch_size)

    def states(self) -> dict[str, str]:
        """Each local dependency: ready, not_started (built on first use) or failed: why."""
        out = {}
        for cap in PROVIDED:
            if not self.has(cap):
                continue
            if cap in self._ready:
                out[cap] = "ready"
            elif cap in self._failed:
                out[cap] = f"failed: {self._failed[cap]}"
            else:
                out[cap] = "not_started"
        return out

    async def close(self) -> None:
        """Close what this node built (given providers belong to the caller)."""
        # Builds still under way (the warm-up's, cancelled with the node) finish first, so what they open is closed.
        await asyncio.gather(*self._builds.values(), return_exceptions=True)
        for cap in reversed(self._built):
            provider = self._ready.pop(cap, None)
            closer = getattr(provider, "close", None) or getattr(provider, "aclose", None)
            if closer is None:
                continue
            try:
                result = closer()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("closing the %s provider failed", cap)
        self._built.clear()
        self.store_ready.clear()


def _with_spaces(store: object) -> object:
    """A given ``MemoryService`` serves its spaces as a built one does (a memory of one space would refuse
    the ``space`` argument and the workers' ``spaces`` call); other providers are taken as they are."""
    from mnemonet.service import MemoryService, SpacedMemory

    return SpacedMemory(store) if isinstance(store, MemoryService) else store
