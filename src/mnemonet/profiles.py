"""Named profiles: sets of timer and buffer settings for one kind of network, as memberlist's
``DefaultLANConfig`` / ``DefaultWANConfig`` / ``DefaultLocalConfig``.

A profile only moves defaults: a setting given explicitly (a command-line
flag, an ``MNEMONET_*`` variable, a keyword to ``Settings``) always wins
over the profile's value. Choose one with ``--profile`` or
``MNEMONET_PROFILE``; ``lan`` is the field defaults themselves.
"""

from __future__ import annotations

from typing import Any, Literal

ProfileName = Literal["lan", "wan", "test"]

PROFILES: dict[str, dict[str, Any]] = {
    # Nodes on one network or data centre: the defaults in settings.py.
    "lan": {},
    # Nodes across the internet: round trips of 100-300 ms with loss bursts. Probe, suspicion and connection
    # timers stretched as memberlist's WAN profile stretches its LAN one (probe every 5 s with a 3 s ack window,
    # suspicion 6 probe periods, full-state sync every 60 s, 4 gossip targets), and more in flight per link
    # and per message, since each round trip is dearer.
    "wan": {
        "probe_interval": 5.0,
        "probe_timeout": 3.0,
        "suspicion_timeout": 30.0,
        "gossip_interval": 0.5,
        "gossip_fanout": 4,
        "gossip_retransmit_mult": 4,
        "gossip_max_piggyback": 48,
        "push_pull_interval": 60.0,
        "stall_threshold": 1.0,
        "control_timeout": 10.0,
        "link_connect_timeout": 10.0,
        "link_handshake_timeout": 10.0,
        "link_send_timeout": 15.0,
        "link_maintenance_interval": 2.0,
        "max_inflight_per_link": 128,
        "member_admission_timeout": 30.0,
        "rejoin_backoff_max": 15.0,
        "dead_member_reap": 300.0,
        "max_message_age": 60.0,
        "shutdown_timeout": 10.0,
        "health_timeout": 5.0,
    },
    # Many nodes on one loopback in one test run: detection within seconds, so multi-node tests finish on two
    # loaded cores. Routed calls keep a few seconds, not the default 90, so a lost reply fails a test quickly.
    "test": {
        "probe_interval": 0.25,
        "probe_timeout": 0.15,
        "indirect_probes": 2,
        "suspicion_timeout": 1.5,
        "gossip_interval": 0.1,
        "push_pull_interval": 2.0,
        "link_maintenance_interval": 0.2,
        "link_connect_timeout": 1.0,
        "control_timeout": 1.0,
        "request_timeout": 5.0,
        "shutdown_timeout": 1.0,
        "rejoin_backoff_initial": 0.2,
        "rejoin_backoff_max": 1.0,
    },
}
