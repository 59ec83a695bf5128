"""The one registry of remote methods: each method's name, capability, client scope and reach.

Everything that exposes or routes a method reads this table: the router (which
capability serves it), the RPC layer and the HTTP API (``p2p/methods.py`` adds
the argument and result types from the interfaces), the token scopes and spaces
(``p2p/authority.py``), and the OpenAPI document. A name missing here cannot be
called over the network at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Scope = Literal["read", "write", "admin"]


@dataclass(frozen=True)
class Reach:
    """Which memory spaces a client call touches: what a token's spaces are checked against (``p2p/authority.py``).

    - ``named``: the spaces its arguments ``args`` name (``space`` left out: the token's first space);
    - ``own``: it names none, and its answer is cut to the caller's spaces (``spaces``, ``audit_log``);
    - ``token``: the spaces of the client token it names (``revoke_token``);
    - ``cluster``: the network as a whole: tokens for every space (``*``) only.
    """

    kind: Literal["named", "own", "token", "cluster"]
    args: tuple[str, ...] = ()


IN_SPACE = Reach("named", ("space",))
_NAME = Reach("named", ("name",))
_SHARE = Reach("named", ("name", "reads"))
_OWN = Reach("own")


@dataclass(frozen=True)
class Remote:
    """One remote method as declared.

    ``scope`` is the token scope a client needs to call it over HTTP; ``None`` keeps it
    peer-only. ``caller`` is the worker capability a peer must have announced to call a
    worker-internal method (checked where it is served, ``p2p/peer_access.py``). ``event``
    is the write event a served call floods (``observation``, ``claim``, ``retraction`` or
    ``erasure``), naming the ids its result's ``written_ids()`` gives. ``reach`` is which
    spaces a client call touches; a client method declaring none is refused to every token
    but one for every space.
    """

    name: str
    capability: str
    scope: Scope | None = None
    summary: str = ""
    caller: str | None = None
    event: str | None = None
    reach: Reach | None = None


_STORE_CLIENT: tuple[tuple[str, Scope, Reach, str], ...] = (
    ("observe", "write", IN_SPACE, "Record what happened or what someone said; statements are extracted from it "
     "(inline, or later by the inference worker with defer_extraction)."),
    ("claim", "write", IN_SPACE, "Assert one statement as the source (it may supersede or contradict earlier ones)."),
    ("import_file", "write", IN_SPACE, "Observe every line of a file's text (jsonl, locomo, chat) under the keys "
     "run_node.py import gives it, so a retry writes nothing twice; each line's outcome: ok, duplicate, refused (why), "
     "unreadable. Bounded: import_request_max_lines, import_request_max_chars."),
    ("remember", "read", IN_SPACE, "Answer a question from the memory, leading with the current answer, with "
     "provenance."),
    ("recall", "read", IN_SPACE, "The statements, changes, conflicts and observations behind an answer, unwritten."),
    ("brief", "read", IN_SPACE, "What a new agent session should know about a subject (or the team) within a token "
     "budget: current facts, open conflicts, what changed since a time, the most used concepts; as text and as "
     "lines with their ids."),
    ("search", "read", IN_SPACE, "Hybrid (vector + keyword) search over observations, statements and concepts."),
    ("load", "read", IN_SPACE, "Full items with provenance by id; the short ids the CLI prints (obs-1a2b3c4d) work "
     "too."),
    ("get_recent_observations", "read", IN_SPACE, "The newest observations."),
    ("get_recent_statements", "read", IN_SPACE, "The newest statements."),
    ("get_unresolved_contradictions", "read", IN_SPACE, "Open contradictions, newest first."),
    ("get_concepts", "read", IN_SPACE, "Concepts by name."),
    ("get_concept_statements", "read", IN_SPACE, "Statements about one concept, superseded ones marked."),
    ("stats", "read", IN_SPACE, "Counts of the store and the active language model."),
    ("clear", "admin", IN_SPACE, "Delete everything in a space."),
    ("revoke_token", "admin", Reach("token", ("token_id",)), "Revoke a client token: by id with a token for every "
     "space ('*'), else by the token itself, whose spaces must all be the caller's (the caller is recorded as who "
     "revoked it)."),
    ("revoked_tokens", "admin", Reach("cluster"), "Ids of revoked client tokens, newest first ('*' tokens only)."),
    ("audit_log", "admin", _OWN, "Audit records of client writes and admin calls, newest first: those of the "
     "caller's spaces (every record for a '*' token)."),
    ("retract", "write", IN_SPACE, "Take back a statement or observation the token's source wrote (another "
     "source's: an admin of the space): never current again, the history kept."),
    ("forget", "admin", IN_SPACE, "Erase an observation, all a source wrote, or (whole_space) a whole space, and what "
     "derives only from it, compacting the files so the bytes are gone; a tombstone stays."),
    ("tombstones", "admin", IN_SPACE, "Tombstones of erasures (what kind, how many, when, by whom; never content), "
     "newest first."),
    ("spaces", "read", _OWN, "The memory spaces this token may use (a '*' token: every space)."),
    ("create_space", "admin", _NAME, "Create a memory space (a graph and a vector schema of its own)."),
    ("delete_space", "admin", _NAME, "Delete a memory space and everything in it: forget with whole_space, "
     "answered true/false."),
    ("share_space", "admin", _SHARE, "Let one space read another (both the caller's): its searches and answers "
     "include the other's items, marked with their space (read-only, not transitive)."),
    ("unshare_space", "admin", _SHARE, "Stop one space reading another."),
)
# Each worker's own store methods. (The audit log has no remote append: the node that serves a call writes
# its record, ``p2p/audit.py``.)
_WORKER: dict[str, tuple[str, ...]] = {
    "inference": ("record_inference", "pending_observations", "pending_extractions", "complete_extraction"),
    "validation": ("pending_statements", "mark_processed", "link_statements", "predicate_profile",
                   "record_predicate"),
    "consolidation": ("pending_consolidation", "record_summary"),
}
_LLM_PEER = (
    "llm.extract_observation", "llm.parse_claim", "llm.answer", "llm.infer_claims",
    "llm.judge_pairs", "llm.summarise", "llm.predicate_cardinality",
)

# The writes that wake the workers and the dashboards: the event each floods once served. Workers wake on
# observations and claims; dashboards show every kind, and redraw what a retraction or an erasure changed.
_EVENTS = {"observe": "observation", "claim": "claim", "record_inference": "claim", "record_summary": "claim",
           "retract": "retraction", "forget": "erasure"}

REGISTRY: dict[str, Remote] = {
    r.name: r
    for r in (
        *(Remote(name, "store", scope, summary, event=_EVENTS.get(name), reach=reach)
          for name, scope, reach, summary in _STORE_CLIENT),
        *(Remote(name, "store", caller=worker, event=_EVENTS.get(name))
          for worker, names in _WORKER.items() for name in names),
        Remote("infer", "llm", "read", "Claims the language model infers from a text (nothing is stored).",
               reach=IN_SPACE),
        *(Remote(name, "llm") for name in _LLM_PEER),
        Remote("embed.embed", "embed"),
    )
}

# Short names clients may use for a method: the ones the CLI and the MCP tools show.
ALIASES: dict[str, str] = {"recent": "get_recent_observations", "contradictions": "get_unresolved_contradictions",
                           "import": "import_file"}


def declared(name: str) -> Remote | None:
    """The declaration of ``name``; None if it is not a remote method."""
    return REGISTRY.get(name)


def client_method(name: str) -> Remote | None:
    """The client method ``name`` (or its alias) names; None if a client may not call it."""
    remote = REGISTRY.get(ALIASES.get(name, name))
    return remote if remote is not None and remote.scope is not None else None


# Arguments the node fills in itself from the caller's token, whatever the body says (``p2p/authority.py``).
SERVER_FILLED: dict[str, frozenset[str]] = {name: frozenset({"by"}) for name in (
    "revoke_token", "forget", "create_space", "delete_space", "share_space", "unshare_space")}
# Idempotency keys are scoped by the token that writes (``model.ids.keyed_id``).
SERVER_FILLED["observe"] = SERVER_FILLED["claim"] = frozenset({"writer"})
SERVER_FILLED["import_file"] = frozenset({"as_source", "writer"})
SERVER_FILLED["audit_log"] = frozenset({"spaces"})
SERVER_FILLED["retract"] = frozenset({"any_source"})
