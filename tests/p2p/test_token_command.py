"""``run_node.py token create|revoke`` as a user runs them, against a live node."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from netsupport import CLUSTER_KEY, InMemoryStore, NodeFactory

from mnemonet.node.cli_entry import main
from mnemonet.p2p.client import HttpMemoryClient
from mnemonet.p2p.errors import Unauthorized
from mnemonet.p2p.tokens import TokenVerifier


def _run(argv: list[str]) -> tuple[int, str]:
    from mnemonet.node import token_command

    out = io.StringIO()
    code = token_command.main(argv, out=out)
    return code, out.getvalue()


def test_create_prints_the_token_on_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY", CLUSTER_KEY)
    code, out = _run(["create", "ci-bot", "--scopes", "read,write", "--ttl", "2h"])
    assert code == 0
    token = TokenVerifier(CLUSTER_KEY).verify(out.splitlines()[-1])
    assert (token.name, token.scopes) == ("ci-bot", frozenset({"read", "write"}))
    assert f"token id: {token.id}" in out.splitlines()[0]
    assert token.spaces == ("default",)


def test_create_names_the_spaces_a_token_may_use(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY", CLUSTER_KEY)
    code, out = _run(["create", "team-a", "--scopes", "read,write", "--spaces", "alpha,beta"])
    assert code == 0 and "spaces: alpha,beta" in out.splitlines()[0]
    assert TokenVerifier(CLUSTER_KEY).verify(out.splitlines()[-1]).spaces == ("alpha", "beta")
    assert _run(["create", "x", "--spaces", "Alpha"])[0] == 2
    assert "space name" in capsys.readouterr().err


def test_create_refuses_bad_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY", CLUSTER_KEY)
    assert _run(["create", "x", "--scopes", "root"])[0] == 2
    assert "unknown scopes ['root']" in capsys.readouterr().err
    assert _run(["create", "x", "--ttl", "forever"])[0] == 2
    monkeypatch.delenv("MNEMONET_CLUSTER_KEY")
    with pytest.raises(SystemExit):
        main(["token", "create", "x"])  # no key: a usage error, not a token nobody can verify
    assert "cluster key is needed" in capsys.readouterr().err


async def test_revoke_through_a_node(make_node: NodeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMONET_CLUSTER_KEY", CLUSTER_KEY)
    node = await make_node({"store"}, providers={"store": InMemoryStore()})
    _, out = _run(["create", "laptop", "--scopes", "read"])
    token = out.splitlines()[-1]
    async with HttpMemoryClient(node.url, token) as client:
        await client.stats()
        code, said = await asyncio.to_thread(_run, ["revoke", token, "--url", node.url])  # the token itself
        assert (code, said.strip()) == (0, f"revoked {TokenVerifier(CLUSTER_KEY).verify(token).id}")
        with pytest.raises(Unauthorized, match="revoked"):
            await client.stats()
    token_id = out.splitlines()[0].split()[2]
    code, said = await asyncio.to_thread(_run, ["revoke", token_id, "--url", node.url])  # or its id
    assert (code, said.strip()) == (0, f"{token_id} was revoked already")


def test_create_and_revoke_read_the_key_from_a_file_as_the_node_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The node takes --cluster-key-file (the key out of `ps` and of the environment); so does the command
    # that makes its tokens.
    monkeypatch.delenv("MNEMONET_CLUSTER_KEY", raising=False)
    key_file = tmp_path / "cluster.key"
    key_file.write_text(CLUSTER_KEY + "\n")
    code, out = _run(["create", "filed", "--scopes", "read", "--cluster-key-file", str(key_file)])
    assert code == 0
    assert TokenVerifier(CLUSTER_KEY).verify(out.splitlines()[-1]).name == "filed"
    assert _run(["create", "x", "--cluster-key-file", str(tmp_path / "missing.key")])[0] == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run(["revoke", "--help"])
    assert "--cluster-key-file" in capsys.readouterr().out
