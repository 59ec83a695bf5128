"""``PeerNode``: one process's place in the network, with the capabilities it was given."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
import socket
import time
import uuid
from collections import Counter
from typing import Any, Protocol

from mnemonet.node.vector_sync import VectorSync
from mnemonet.node.wiring import LocalProviders, build_workers
from mnemonet.p2p.client import P2PMemoryClient
from mnemonet.p2p.cluster import Cluster, membership_config
from mnemonet.p2p.envelope import Codec, Envelope, Kind
from mnemonet.p2p.events import EventBus
from mnemonet.p2p.limits import KeyedLimiter, ReadBudget
from mnemonet.p2p.membership import Member, Membership, MemberState
from mnemonet.p2p.metrics import NodeMetrics
from mnemonet.p2p.neighbours import Neighbours
from mnemonet.p2p.network import SOCKETS, Network, Server
from mnemonet.p2p.routing import Router
from mnemonet.p2p.rpc import RpcClient, RpcServer
from mnemonet.p2p.server import create_app
from mnemonet.p2p.tokens import TokenVerifier
from mnemonet.p2p.transport import Transport, error_payload
from mnemonet.p2p.web_guard import own_names
from mnemonet.settings import Settings
from mnemonet.store.datadir import DataDirLock, uses_embedded_servers
from mnemonet.web import mount_dashboard

log = logging.getLogger(__name__)

CAPABILITIES = frozenset({"store", "llm", "embed", "inference", "validation", "consolidation", "cli"})


class Worker(Protocol):
    """A long-running agent the node starts and stops with itself; ``stats()`` (optional) shows in /health."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(settings: Settings) -> None:
    """Refuse to expose an unauthenticated node beyond loopback unless told ``insecure``, or one with a short key."""
    if not settings.cluster_key and not settings.insecure and not _is_loopback(settings.host):
        raise ValueError(
            f"refusing to bind {settings.host!r} without a cluster key: set MNEMONET_CLUSTER_KEY "
            "or --cluster-key-file PATH, bind 127.0.0.1, or pass --insecure"
        )
    if settings.cluster_key and len(settings.cluster_key) < settings.min_cluster_key_chars \
            and not _is_loopback(settings.host):
        raise ValueError(
            f"refusing to bind {settings.host!r} with a {len(settings.cluster_key)}-character cluster key: "
            f"use at least {settings.min_cluster_key_chars} characters, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )


class PeerNode:
    """Transport, membership, routing, RPC and events of one node, plus its local providers and workers."""

    def __init__(self, settings: Settings, capabilities: set[str] | frozenset[str],
                 providers: dict[str, object] | None = None, data_dir_lock: DataDirLock | None = None,
                 network: Network = SOCKETS) -> None:
        unknown = set(capabilities) - CAPABILITIES
        if unknown:
            raise ValueError(f"capabilities: unknown {sorted(unknown)} (expected some of {sorted(CAPABILITIES)})")
        check_bind(settings)
        self.settings = settings
        self.capabilities = frozenset(capabilities)
        self.node_id = settings.node_id or uuid.uuid4().hex
        self.cluster_key = settings.cluster_key
        self.max_body_bytes = settings.max_envelope_bytes
        self.tokens = TokenVerifier(settings.cluster_key, fetch_revoked=self._revoked_tokens,
                                    refresh=settings.token_revocation_refresh, fetch_timeout=settings.control_timeout)
        extra_hosts = [h for h in settings.allowed_hosts.split(",") if h.strip()]
        # Keyless nodes have only the Host check between them and a DNS-rebinding page.
        self.host_names = (own_names(settings.host, settings.advertise_url, extra_hosts)
                           if not settings.cluster_key or extra_hosts else None)
        self.codec = Codec(settings.cluster_key, max_bytes=settings.max_envelope_bytes,
                           max_age=settings.max_message_age, replay_entries=settings.replay_cache_size)
        self.network = network
        self.transport = Transport(self.node_id, self.codec, settings, self._dispatch, network)
        self.events = EventBus(self.node_id, self.transport, settings.event_ttl, settings.event_dedup_size)
        self.providers = LocalProviders(settings, self.capabilities, dict(providers or {}), self)
        # A node that will start embedded servers owns its data directory for its whole life
        # (``run_node.py`` takes the lock before the heavy imports and hands it over).
        self._data_dir_lock: DataDirLock | None = None
        if "store" in self.capabilities and "store" not in (providers or {}) and uses_embedded_servers(settings):
            self._data_dir_lock = data_dir_lock or DataDirLock(settings.data_dir)
        self.metrics = NodeMetrics(self)
        self.rpc_server = RpcServer(self.node_id, self.providers, settings, capabilities_of=self._capabilities_of,
                                    authenticate=self.tokens.authenticate, on_write=self._published,
                                    metrics=self.metrics)
        self.client_limits = KeyedLimiter(
            "client", max_in_flight=settings.max_inflight_per_client, rate=settings.client_rate_limit,
            burst=settings.client_rate_burst, max_keys=settings.limiter_max_keys, retry_after=settings.busy_retry_after)
        self.peer_reads = ReadBudget(max_reads=settings.max_unauthenticated_reads,
                                     max_bytes=settings.unauthenticated_read_budget_bytes,
                                     retry_after=settings.busy_retry_after)
        self.peer_read_timeout = settings.peer_read_timeout
        self.vector_sync = VectorSync(self.providers, settings.vector_sync_interval, settings.vector_sync_limit,
                                      settings.index_takeover_interval)
        self.client = P2PMemoryClient(self)
        self.url = ""
        self.state = "new"
        self._rng = random.Random()
        self._workers: list[Worker] = build_workers(self)
        self._tasks: list[asyncio.Task[Any]] = []
        self._http: Server | None = None
        self._membership: Membership | None = None
        self._cluster: Cluster | None = None
        self._rpc: RpcClient | None = None
        self._router: Router | None = None
        self._store_open: asyncio.Task[None] | None = None  # /health opening the store in the background
        self._health_check: asyncio.Task[dict[str, Any]] | None = None  # shared by /health requests
        self._health_checked_at = 0.0

    # -- parts that exist once started ------------------------------------------------
    @property
    def membership(self) -> Membership:
        """This node's membership view (after ``start``)."""
        if self._membership is None:
            raise RuntimeError("node is not started")
        return self._membership

    def runs(self, capability: str) -> bool:
        """True if a routable member (this node included) has ``capability``; False before ``start``."""
        return self._membership is not None and bool(self._membership.alive(capability))

    @property
    def cluster(self) -> Cluster:
        """The membership protocol I/O (after ``start``)."""
        if self._cluster is None:
            raise RuntimeError("node is not started")
        return self._cluster

    @property
    def router(self) -> Router:
        """Peer selection (after ``start``)."""
        if self._router is None:
            raise RuntimeError("node is not started")
        return self._router

    async def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        """Run an allowed method here or on a capable peer; the result in the interface's types."""
        if self._rpc is None:
            raise RuntimeError("node is not started")
        return await self._rpc.call(method, kwargs)

    def add_worker(self, worker: Worker) -> None:
        """Start ``worker`` with the node and stop it before the node leaves; add before ``start``."""
        if self.state != "new":
            raise RuntimeError("add workers before start()")
        self._workers.append(worker)

    # -- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        """Serve, join through the seeds (retrying in the background if none answers), start workers."""
        if self.state != "new":
            raise RuntimeError(f"cannot start a node that is {self.state}")
        self.state = "starting"
        s = self.settings
        if self._data_dir_lock is not None:
            try:
                self._data_dir_lock.acquire()  # before any embedded server starts; DataDirInUse if taken
            except BaseException:
                self.state = "stopped"
                raise
        await self.transport.start()
        app = create_app(self)
        if "store" in self.capabilities or s.ui:
            mount_dashboard(app, self)  # the web dashboard: /ui, /v1/ws, /v1/graph, /v1/stats
        self._http = self.network.server(app, s.host, s.port, ws_max_bytes=2 * s.max_envelope_bytes,
                                         graceful_timeout=s.shutdown_timeout, idle_timeout=s.http_idle_timeout,
                                         header_timeout=s.http_header_timeout)
        port = await self._http.start()
        self.url = (s.advertise_url or f"http://{self._advertised_host()}:{port}").rstrip("/")
        local = Member(self.node_id, self.url, self.capabilities, 0, MemberState.ALIVE, time.monotonic())
        self._membership = Membership(local, membership_config(s), time.monotonic)
        self._membership.add_listener(self._log_change)
        self._router = Router(self._membership, s.latency_ewma_alpha, self._rng)
        self._membership.add_listener(self._forget_gone)
        self._cluster = Cluster(s, self._membership, self.transport, self._rng)
        self._rpc = RpcClient(self.node_id, self.rpc_server, self._router, self.transport, s, self.metrics)
        neighbours = Neighbours(self._membership, self.transport, s.max_neighbours, s.link_maintenance_interval,
                                self._rng)
        log.info("node %s serving %s with capabilities %s", self.node_id, self.url, ",".join(sorted(self.capabilities)))
        if self._cluster.seeds and not await self._cluster.join_once():
            self._cluster.warn_not_joined(self._cluster.seeds)
        await neighbours.maintain()
        self._tasks = [
            asyncio.create_task(self._cluster.detector.run(), name=f"detector-{self.node_id}"),
            asyncio.create_task(self._cluster.gossip_loop(), name=f"gossip-{self.node_id}"),
            asyncio.create_task(self._cluster.bootstrap_loop(), name=f"bootstrap-{self.node_id}"),
            asyncio.create_task(self._cluster.admission_loop(), name=f"admission-{self.node_id}"),
            asyncio.create_task(neighbours.run(), name=f"neighbours-{self.node_id}"),
        ]
        if "store" in self.capabilities:
            self._tasks.append(asyncio.create_task(self.vector_sync.run(), name=f"vector-sync-{self.node_id}"))
            self._tasks.append(asyncio.create_task(self.vector_sync.run_takeover(),
                                                   name=f"index-takeover-{self.node_id}"))
        if s.warm_up:
            self._tasks.append(asyncio.create_task(self.providers.warm_up(), name=f"warm-up-{self.node_id}"))
        self.state = "alive"
        for worker in self._workers:
            await worker.start()

    def _capabilities_of(self, node_id: str) -> frozenset[str] | None:
        """What peer ``node_id`` announced, if this node lists it (the serving side's access check)."""
        member = self._membership.get(node_id) if self._membership is not None else None
        return member.capabilities if member is not None else None

    async def _revoked_tokens(self) -> list[str]:
        result: list[str] = await self.call("revoked_tokens", {})
        return result

    def _advertised_host(self) -> str:
        host = self.settings.host
        if host in ("0.0.0.0", "::", ""):
            return socket.gethostname()  # reachable name inside Docker networks; override with advertise_url
        return f"[{host}]" if ":" in host else host

    async def stop(self) -> None:
        """Graceful: stop workers, announce ``leave``, close links and the server, close providers."""
        if self.state not in ("alive", "starting"):
            return
        self.state = "leaving"
        for worker in reversed(self._workers):
            try:
                await worker.stop()
            except Exception:
                log.exception("worker %r failed to stop", worker)
        await self._cancel_tasks()
        if self._cluster is not None:
            await self._cluster.leave()
        await self.transport.close()
        if self._http is not None:
            await self._http.stop()
        await self.providers.close()
        self._release_data_dir()
        self.state = "stopped"
        log.info("node %s left", self.node_id)

    async def kill(self) -> None:
        """Stop abruptly, without ``leave`` (as a crash looks to peers); for tests."""
        self.state = "killed"
        for worker in self._workers:
            try:
                await worker.stop()
            except Exception:
                log.exception("worker %r failed to stop", worker)
        await self._cancel_tasks()
        await self.transport.close(abort=True)
        if self._http is not None:
            await self._http.stop(force=True)
        await self.providers.close()
        self._release_data_dir()

    def _release_data_dir(self) -> None:
        if self._data_dir_lock is not None:
            self._data_dir_lock.release()  # after the servers stopped: the next owner finds none running

    async def _cancel_tasks(self) -> None:
        for pending in (self._store_open, self._health_check):
            if pending is not None and not pending.done():
                self._tasks.append(pending)
        self._store_open = self._health_check = None
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            # Bounded: a task that will not end (its cancellation swallowed below it) must not hold the stop.
            _, stuck = await asyncio.wait(self._tasks, timeout=self.settings.shutdown_timeout)
            for task in stuck:
                log.warning("node %s: task %s did not stop when cancelled", self.node_id, task.get_name())
        self._tasks = []

    # -- serving --------------------------------------------------------------------
    async def _dispatch(self, env: Envelope, linked: bool = False) -> Envelope | None:
        if self.state in ("stopped", "killed"):
            # A link reader or HTTP request outliving the stop must not ack a ping:
            # the ack would refute the suspicion and keep a stopped node alive.
            return None
        if env.target is not None and env.target != self.node_id:
            # Another node once had this address (answering for it would keep a dead member alive), or the
            # envelope, signed for another node, is replayed here.
            return env.reply(Kind.RESPONSE, self.node_id, error_payload(
                "wrong_target", f"this is {self.node_id}, not {env.target}"))
        if env.target is None and env.kind is not Kind.JOIN:
            # Every envelope names the node it is for, so none can be replayed to another (a join asks first).
            return env.reply(Kind.RESPONSE, self.node_id, error_payload(
                "invalid", f"{env.kind} without a target: every envelope names the node it is for"))
        try:
            if self._cluster is not None and self._cluster.handles(env.kind):
                return await self._cluster.handle(env)
            if env.kind is Kind.REQUEST:
                return await self.rpc_server.handle(env, linked)
            if env.kind is Kind.EVENT:
                await self.events.handle(env)
                return None
        except ValueError as exc:
            return env.reply(Kind.RESPONSE, self.node_id, error_payload("bad_input", str(exc)))
        return env.reply(Kind.RESPONSE, self.node_id, error_payload("invalid", f"{env.kind} is not served here"))

    async def _published(self, event_type: str, ids: list[str], space: str) -> None:
        await self.events.publish(event_type, ids, space)

    def _log_change(self, member: Member, old: MemberState | None) -> None:
        if member.node_id == self.node_id:
            if old is not None and member.state is old:
                log.info("refuted suspicion: now incarnation %d", member.incarnation)
            return
        if old is not member.state:
            log.info("member %s (%s) %s -> %s", member.node_id, member.url, old or "new", member.state)

    def _forget_gone(self, member: Member, old: MemberState | None) -> None:
        if member.state in (MemberState.DEAD, MemberState.LEFT) and self._router is not None:
            self._router.forget(member.node_id)
        if member.state is MemberState.DEAD and member.node_id != self.node_id:
            # A peer that left answers what it had taken before it stops; a dead one never will.
            self.transport.abandon_calls_to(member.node_id, "was declared dead")

    def worker_stats(self) -> list[dict[str, Any]]:
        """Each worker's name and counters (``stats()`` where it has one)."""
        out = []
        for worker in self._workers:
            stats = getattr(worker, "stats", None)
            out.append({"name": type(worker).__name__, **(stats() if callable(stats) else {})})
        return out

    def health(self) -> dict[str, Any]:
        """The ``/health`` document."""
        members = self._membership.members(include_dead=True) if self._membership else []
        workers = self.worker_stats()
        return {
            "node_id": self.node_id,
            "url": self.url,
            "capabilities": sorted(self.capabilities),
            "state": self.state,
            "member_count": sum(1 for m in members if m.state in (MemberState.ALIVE, MemberState.SUSPECT)),
            "members": [
                {"node_id": m.node_id, "capabilities": sorted(m.capabilities), "url": m.url,
                 "state": m.state.value, "incarnation": m.incarnation}
                for m in members
            ],
            "membership": self._cluster.join_status() if self._cluster is not None else {"joined": False},
            "neighbours": sorted(self.transport.neighbours()),
            "dependencies": self.providers.states(),
            "workers": workers,
            "requests": {"in_flight": self.rpc_server.in_flight, "served": self.rpc_server.served},
            "events_delivered": self.events.delivered,
            "refused_envelopes": dict(self.codec.refused),
            **({"vector_sync": self.vector_sync.stats()} if "store" in self.capabilities else {}),
        }

    async def health_checks(self) -> dict[str, Any]:
        """The newest ``_check_health`` result, run again once it is ``health_cache_ttl`` old.

        ``/health`` answers anyone, so requests share one check in flight and its result for the TTL:
        a caller without a token cannot make the node query its databases at will.
        """
        check = self._health_check
        stale = time.monotonic() - self._health_checked_at >= self.settings.health_cache_ttl
        if check is None or (check.done() and stale):
            check = self._health_check = asyncio.create_task(self._shared_check(), name=f"health-{self.node_id}")
        return await asyncio.shield(check)

    async def _shared_check(self) -> dict[str, Any]:
        # Its time is set here, not in a done callback: a request between the task's end and its callback
        # would see a finished check with the previous time and start a second one.
        try:
            result = await self._check_health()
        except BaseException:
            self._health_check = None  # a failed check is not kept: the next request runs its own
            raise
        self._health_checked_at = time.monotonic()
        return result

    async def _check_health(self) -> dict[str, Any]:
        """``status`` (ok/degraded/failing) and ``checks``: each local database from a real round trip.

        A store not opened yet is opened in the background (the first call would
        open it anyway): ``degraded`` until it answers, ``failing`` if it cannot be
        opened or a round trip fails within ``health_timeout``.
        """
        checks: dict[str, dict[str, Any]] = {}
        if self.providers.has("store"):
            store = self.providers.ready("store")
            check = getattr(store, "health", None)
            if callable(check):
                checks.update(await check(self.settings.health_timeout))
            elif store is None:
                checks["store"] = self._store_opening()
        for capability, state in self.providers.states().items():
            if state.startswith("failed") and capability != "store":
                checks[capability] = {"status": "failing", "error": state.removeprefix("failed: ")}
        states = {c["status"] for c in checks.values()}
        status = "failing" if "failing" in states else "degraded" if states - {"ok"} else "ok"
        return {"status": status, "checks": checks}

    def _store_opening(self) -> dict[str, Any]:
        state = self.providers.states()["store"]
        if self._store_open is None or self._store_open.done():
            self._store_open = asyncio.create_task(self._open_store(), name=f"open-store-{self.node_id}")
        if state.startswith("failed"):
            return {"status": "failing", "error": state.removeprefix("failed: ")}
        return {"status": "starting"}

    async def _open_store(self) -> None:
        try:
            await self.providers.get("store")
        except Exception as exc:  # recorded in providers.states(); /health reports it and tries again
            log.warning("opening the store failed: %s", exc)

    def metric_sources(self) -> dict[str, Any]:
        """Live counters ``/metrics`` reads at each scrape (see ``mnemonet.p2p.metrics``)."""
        members = self._membership.members(include_dead=True) if self._membership else []
        store = self.providers.ready("store")
        llm = self.providers.ready("llm") or getattr(store, "llm", None)
        usage = getattr(llm, "usage", None)
        return {
            "members": dict(Counter(m.state.value for m in members)),
            "suspicions": dict(self._membership.suspicions) if self._membership else {},
            "deaths": dict(self._membership.deaths) if self._membership else {},
            "events_delivered": self.events.delivered,
            "refused": dict(self.codec.refused),
            "workers": self.worker_stats(),
            "llm_calls": dict(getattr(store, "llm_calls", None) or {}),
            "llm_usage": usage() if callable(usage) else {},
            "vector_sync": self.vector_sync.stats(),
        }
