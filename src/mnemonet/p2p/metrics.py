"""``/metrics`` of one node in Prometheus text format, on a registry of its own.

Several nodes may share a process (tests, the demo), so nothing goes to the
global registry. Request counts and latencies are recorded as calls are
served; everything else (members by state, events, refused envelopes,
worker and language-model counters) is read from the node at scrape time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Observed(Protocol):
    """What the scrape-time collector reads from a node."""

    node_id: str

    def metric_sources(self) -> dict[str, Any]:
        """``members`` (state -> count), ``suspicions`` and ``deaths`` (member id -> times this node's view
        turned it suspect / dead), ``events_delivered``, ``events_published``, ``refused`` (reason ->
        count), ``workers`` (list of counter dicts), ``llm_calls`` (purpose -> count), ``llm_usage``,
        ``vector_sync``."""
        ...


class NodeMetrics:
    """The metrics of one node; ``render()`` is the ``/metrics`` body."""

    def __init__(self, node: Observed) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "mnemonet_requests", "MemoryAPI/provider calls served by this node, by method and outcome "
            "(ok or the error code).", ["method", "outcome"], registry=self.registry)
        self.latency = Histogram(
            "mnemonet_request_duration_seconds", "Time to serve one call on this node.", ["method"],
            buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.failovers = Counter(
            "mnemonet_rpc_failovers", "Routed calls retried on another peer, by method and reason.",
            ["method", "reason"], registry=self.registry)
        self.registry.register(_ScrapeCollector(node))

    def observe_request(self, method: str, outcome: str, seconds: float | None = None) -> None:
        """Count one served (or refused) call."""
        self.requests.labels(method, outcome).inc()
        if seconds is not None:
            self.latency.labels(method).observe(seconds)

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)


class _ScrapeCollector(Collector):
    """Reads the node's live counters each scrape."""

    def __init__(self, node: Observed) -> None:
        self._node = node

    def describe(self) -> list[Metric]:
        # Registered while the node is still being built: nothing to read yet.
        return []

    def collect(self) -> Iterator[Metric]:
        src = self._node.metric_sources()
        members = GaugeMetricFamily("mnemonet_members", "Members this node knows, by state.", labels=["state"])
        for state, count in sorted(src.get("members", {}).items()):
            members.add_metric([state], count)
        yield members
        for key, help_text in (("suspicions", "Times this node's view of a member turned suspect (a new suspicion, "
                                "by its own failure detector or gossiped to it), by member."),
                               ("deaths", "Times this node's view of a member turned dead, by member.")):
            verdicts = CounterMetricFamily(f"mnemonet_member_{key}", help_text, labels=["node"])
            for node_id, count in sorted(src.get(key, {}).items()):
                verdicts.add_metric([node_id], count)
            yield verdicts
        yield CounterMetricFamily("mnemonet_events_delivered", "Write events delivered to this node's listeners.",
                                  value=src.get("events_delivered", 0))
        refused = CounterMetricFamily("mnemonet_refused_envelopes", "Peer envelopes refused, by reason.",
                                      labels=["reason"])
        for reason, count in sorted(src.get("refused", {}).items()):
            refused.add_metric([reason], count)
        yield refused
        workers = CounterMetricFamily("mnemonet_worker_items", "Worker agent counters, by worker and counter.",
                                      labels=["worker", "counter"])
        for stats in src.get("workers", []):
            name = str(stats.get("worker") or stats.get("name") or "worker")
            for key, value in stats.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    workers.add_metric([name, key], value)
        yield workers
        calls = CounterMetricFamily("mnemonet_llm_calls", "Language-model calls made by this node's memory "
                                    "service, by purpose.", labels=["purpose"])
        for purpose, count in sorted(src.get("llm_calls", {}).items()):
            calls.add_metric([purpose], count)
        yield calls
        usage = CounterMetricFamily("mnemonet_llm_usage", "Language-model provider counters on this node "
                                    "(calls, input/output tokens, failures).", labels=["counter"])
        for key, value in sorted(src.get("llm_usage", {}).items()):
            if isinstance(value, int | float) and not isinstance(value, bool):
                usage.add_metric([key], value)
        yield usage
        sync = CounterMetricFamily("mnemonet_vector_sync", "Vector sync passes, items it indexed and failed "
                                   "passes; queued rows of dead store nodes taken over.", labels=["counter"])
        for key, value in sorted(src.get("vector_sync", {}).items()):
            sync.add_metric([key], value)
        yield sync
