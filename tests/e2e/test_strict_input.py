"""Hostile text through the HTTP API of a real store node (FalkorDB and PostgreSQL): a clear 400, never a 500.

Issue 31: a lone surrogate (``"\\ud800"``, valid JSON, no valid UTF-8) in observe, claim, search or import
answered 500 and the call's audit record was lost (row 10); a deeply nested line of a jsonl import answered
500 where every other malformed line is ``unreadable`` (row 14); a ``speak-for`` token stored source names
with right-to-left override characters, which then display reversed (row 16).
"""

from __future__ import annotations

import json

import httpx
from netsupport import CLUSTER_KEY, NodeFactory, eventually, sees_all

from mnemonet.p2p.tokens import create_token
from mnemonet.service import MemoryService, SpacedMemory

RELAY = create_token(CLUSTER_KEY, "relay", ["read", "write", "speak-for"], 3600.0)[0]
AUDITOR = create_token(CLUSTER_KEY, "auditor", ["read", "admin"], 3600.0)[0]
LONE = "\\ud800"  # as JSON writes it: the body itself is plain ASCII


async def _post(http: httpx.AsyncClient, method: str, body: str, token: str = RELAY) -> httpx.Response:
    return await http.post(f"/v1/{method}", content=body.encode(),
                           headers={"authorization": f"Bearer {token}", "content-type": "application/json"})


async def test_lone_surrogates_answer_400_and_the_audit_record_is_kept(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    store = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)},
                            request_timeout=60.0)
    front = await make_node({"cli"}, seed=store, request_timeout=60.0)  # its calls are routed to the store
    await eventually(lambda: sees_all([store, front]), 10.0, "the front node joined")
    bodies = {
        "observe": f'{{"text": "I moved to Oslo {LONE}"}}',
        "claim": f'{{"text": "Oslo is cold {LONE}"}}',
        "search": f'{{"query": "Oslo {LONE}"}}',
        "remember": f'{{"query": "where {LONE}"}}',
        "import_file": f'{{"content": "relay: hi {LONE}\\n", "format": "chat"}}',
    }
    answers: dict[tuple[str, str], httpx.Response] = {}
    for node in (store, front):
        async with httpx.AsyncClient(base_url=node.url, trust_env=False, timeout=60.0) as http:
            answers |= {(node.url, method): await _post(http, method, body) for method, body in bodies.items()}
            audit = (await _post(http, "audit_log", '{"limit": 20}', AUDITOR)).json()["result"]
    assert {key: (r.status_code, r.json()["error"]["code"]) for key, r in answers.items()} == dict.fromkeys(
        answers, (400, "bad_input"))
    assert all("surrogate" in r.json()["error"]["message"] for r in answers.values())
    # Writes are audited, refused ones too (reads are not), each by the node that served the call.
    assert sorted((a["method"], a["who"], a["outcome"], a["node"]) for a in audit if a["who"] == "relay") == sorted(
        (method, "relay", "bad_input", node.node_id) for method in ("observe", "claim", "import_file")
        for node in (store, front))
    assert (await store_service.stats())["graph"]["Observation"] == 0


async def test_unreadable_jsonl_lines_are_reported_and_the_rest_imported(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    node = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)},
                           request_timeout=60.0)
    lines = [
        json.dumps({"text": "Ada keeps bees", "source": "ada"}),
        '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}",  # nested past the parser's recursion limit
        f'{{"text": "lone {LONE} surrogate", "source": "ada"}}',
        f'{{"text": "a speaker with a lone surrogate", "source": "ada{LONE}"}}',
        '{"text": "not closed"',
        json.dumps({"text": "Ada moved to Lyon", "source": "ada"}),
    ]
    body = json.dumps({"content": "\n".join(lines) + "\n", "format": "jsonl", "defer_extraction": True})
    async with httpx.AsyncClient(base_url=node.url, trust_env=False, timeout=60.0) as http:
        resp = await _post(http, "import_file", body)
    assert resp.status_code == 200, resp.text
    report = {line["line"]: (line["status"], line["reason"]) for line in resp.json()["result"]["lines"]}
    assert {n: status for n, (status, _) in report.items()} == {
        1: "ok", 2: "unreadable", 3: "unreadable", 4: "unreadable", 5: "unreadable", 6: "ok"}
    assert "nested too deeply" in report[2][1]
    assert "surrogate" in report[3][1] and "surrogate" in report[4][1]
    assert (await store_service.stats())["graph"]["Observation"] == 2


async def test_names_with_bidi_and_format_controls_are_refused(
    make_node: NodeFactory, store_service: MemoryService
) -> None:
    node = await make_node({"store", "llm", "embed"}, providers={"store": SpacedMemory(store_service)},
                           request_timeout=60.0)
    controls = {
        "right-to-left override": "\u202e",
        "left-to-right embedding": "\u202a",
        "first strong isolate": "\u2068",
        "right-to-left mark": "\u200f",
        "arabic letter mark": "\u061c",
        "zero width space": "\u200b",
        "byte order mark": "\ufeff",
        "escape": "\x1b",
    }
    async with httpx.AsyncClient(base_url=node.url, trust_env=False, timeout=60.0) as http:
        refused = {what: await _post(http, "observe", json.dumps({"text": "I paid the invoice",
                                                                 "source": f"bob{char}gnp.exe"}))
                   for what, char in controls.items()}
        imported = await _post(http, "import_file", json.dumps(
            {"content": "mallory\u202e: I paid\n", "format": "chat", "defer_extraction": True}))
        # Letters of every script stay welcome, and so do the joiners some scripts spell words with.
        fine = [await _post(http, "observe", json.dumps({"text": "I paid the invoice", "source": name,
                                                        "defer_extraction": True}))
                for name in ("Zoë", "مريم", "می\u200cخواهم", "👩\u200d💻 dev")]
    assert {what: (r.status_code, r.json()["error"]["code"]) for what, r in refused.items()} == dict.fromkeys(
        controls, (400, "bad_input"))
    assert all("control or format character" in r.json()["error"]["message"] for r in refused.values())
    [line] = imported.json()["result"]["lines"]
    assert line["status"] == "refused" and "control or format character" in line["reason"]
    assert [r.status_code for r in fine] == [200] * 4, [r.text for r in fine]
    sources = {o.source for o in await store_service.get_recent_observations(10)}
    assert sources == {"Zoë", "مريم", "می\u200cخواهم", "👩\u200d💻 dev"}
