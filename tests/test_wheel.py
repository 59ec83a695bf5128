"""The built wheel works on its own: installed outside the checkout, a node from it observes and remembers.

The wheel is built from this checkout (``pip wheel --no-deps``) and installed into a fresh venv in a
temporary folder; its dependencies come from this test's own environment through a ``.pth`` line
(offline and fast), which adds the folder to ``sys.path`` but runs none of its ``.pth`` files, so the
checkout's editable install cannot leak in. The node runs from that venv's ``mnemonet`` script with
the temporary folder as its working directory, against the session's FalkorDB and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from mnemonet.p2p.tokens import create_token
from mnemonet.store.embedded_falkordb import EmbeddedFalkorDB

REPO = Path(__file__).resolve().parents[1]
KEY = "wheel-test-key"
BUILD_TIMEOUT = 600.0  # pip builds in an isolated environment: slow on two loaded cores
START_TIMEOUT = 180.0


def _run(*args: str | Path, cwd: Path) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv outside the checkout with the freshly built wheel installed; returns its bin folder."""
    root = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", root / "dist", REPO, cwd=root)
    [wheel] = (root / "dist").glob("mnemonet-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for data in ("mnemonet/prompts/shared/base.yaml", "mnemonet/prompts/translator/observe.yaml",
                 "mnemonet/truth/relations.yaml", "mnemonet/web/static/index.html"):
        assert data in names, f"{data} is not in the wheel"
    # No pip inside the venv (ensurepip took ~5 s of the fixture): the checkout's pip installs into it.
    _run(sys.executable, "-m", "venv", "--without-pip", root / "venv", cwd=root)
    bin_dir = root / "venv" / "bin"
    site = Path(_run(bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                     cwd=root).strip())
    (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "--quiet", "--no-deps", "--no-index",
         wheel, cwd=root)
    return bin_dir


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Path) -> None:
    where = _run(installed / "python", "-c", "import mnemonet, mnemonet.llm.prompts as p; "
                 "print(mnemonet.__file__); print(p.default_prompts_dir())", cwd=installed).split()
    venv = installed.parent
    assert all(Path(path).is_relative_to(venv) for path in where), where
    assert (Path(where[1]) / "shared" / "base.yaml").is_file()


async def test_a_node_from_the_wheel_observes_and_remembers(
    installed: Path, falkordb_server: EmbeddedFalkorDB, postgres_url: str, unique_name: str, tmp_path: Path
) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update({"MNEMONET_CLUSTER_KEY": KEY, "MNEMONET_LLM": "offline",
                "MNEMONET_FALKORDB_PORT": str(falkordb_server.port), "MNEMONET_DATABASE_URL": postgres_url,
                "MNEMONET_GRAPH_NAME": unique_name, "MNEMONET_DATA_DIR": str(tmp_path / "data")})
    log = tmp_path / "node.log"
    with log.open("wb") as sink:  # a file, not a pipe: a pipe nobody reads would stall the node
        proc = await asyncio.create_subprocess_exec(
            str(installed / "mnemonet"), "--capabilities", "store,llm,embed", "--port", str(port), cwd=tmp_path,
            env=env, stdout=subprocess.DEVNULL, stderr=sink)
    url = f"http://127.0.0.1:{port}"
    token, _ = create_token(KEY, "wheel", ["read", "write", "speak-for"], 3600)
    try:
        async with httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {token}"}, trust_env=False,
                                     timeout=60.0) as http:
            await _until_serving(http, proc, log)
            observed = await http.post("/v1/observe", json={"text": "Maria prefers green tea in the morning.",
                                                             "source": "maria", "idempotency_key": unique_name})
            assert observed.status_code == 200, observed.text
            assert observed.json()["result"]["created"] is True
            answer = await http.post("/v1/remember", json={"query": "What does Maria prefer?"})
            assert answer.status_code == 200, answer.text
            assert "green tea" in answer.json()["result"]["text"].lower()
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 60.0)


async def _until_serving(http: httpx.AsyncClient, proc: asyncio.subprocess.Process, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            tail = (await asyncio.to_thread(log.read_text))[-3000:]
            raise AssertionError(f"the node exited {proc.returncode}: {tail}")
        try:
            if (await http.get("/health")).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.2)
    tail = (await asyncio.to_thread(log.read_text))[-3000:]
    raise AssertionError(f"the node did not serve within {START_TIMEOUT}s: {tail}")
