"""The dashboard in headless Chromium against a real three-node network; saves test-artifacts/dashboard.png."""

from __future__ import annotations

import json
from pathlib import Path

from cdp import browser_page
from livenet import READ_TOKEN, NodeFactory, write_meeting_scenario
from netsupport import eventually, sees_all

from mnemonet.service import MemoryService

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# What the test reads from the page: member rows, contradiction items, the drawn graph, the feed.
PAGE_STATE = """JSON.stringify({
  status: document.getElementById("status").textContent,
  members: [...document.querySelectorAll("#members tr[data-node-id]")].map(r => r.dataset.nodeId),
  states: [...document.querySelectorAll("#members [data-state]")].map(b => b.dataset.state),
  contradictions: [...document.querySelectorAll("#contradictions li[data-contradiction]")].map(li => li.innerText),
  contradicted: document.querySelectorAll("#graph .statement.contradicted").length,
  conflicts: document.querySelectorAll("#graph path.conflict").length,
  center: (document.querySelector("#graph .concept.center text") || {}).textContent || "",
  feed: [...document.querySelectorAll("#feed li[data-event-type]")].map(li => li.innerText),
  observations: (document.querySelector('[data-count="Observations"] .n') || {}).textContent,
})"""


async def test_dashboard_shows_members_contradictions_graph_and_live_feed(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    store = await make_node({"store"}, providers={"store": service}, ui_refresh_interval=0.3)
    agent = await make_node({"cli"}, seed=store)
    viewer = await make_node({"cli"}, seed=store)
    nodes = [store, agent, viewer]
    await eventually(lambda: sees_all(nodes), 3.0, "all joined")
    await write_meeting_scenario(agent.client)


    async with browser_page(tmp_path / "chromium-profile") as page:
        # Without the key the page asks for it; the form puts it in the URL fragment and connects.
        await page.send("Page.navigate", {"url": f"{store.url}/ui"})
        await page.wait_for('document.getElementById("status").textContent + (document.getElementById("auth").hidden)',
                            lambda v: v == "token neededfalse", within=10.0, what="the token form")
        await page.evaluate(f'document.getElementById("auth-key").value = "{READ_TOKEN}";'
                            'document.getElementById("auth").requestSubmit()')
        state = json.loads(await page.wait_for(
            PAGE_STATE,
            lambda v: v is not None and set(json.loads(v)["members"]) >= {n.node_id for n in nodes}
            and json.loads(v)["contradictions"] and json.loads(v)["contradicted"] >= 2,
            within=15.0, what="members, contradiction and graph on the page"))
        assert state["status"] == "live" and await page.evaluate("location.hash") == f"#key={READ_TOKEN}"
        assert state["states"] == ["alive"] * 3
        [conflict] = state["contradictions"]
        assert "user prefers morning meetings" in conflict and "user prefers afternoon" in conflict
        assert "CONTRADICTS" in conflict
        assert state["center"] == "user" and state["conflicts"] == 1  # the graph opens on the contradiction

        # A write made elsewhere in the network reaches the open page live.
        await agent.client.observe("the standup moved to ten", source="user")
        state = json.loads(await page.wait_for(
            PAGE_STATE, lambda v: any("standup moved to ten" in f for f in json.loads(v)["feed"])
            and json.loads(v)["observations"] == "3",
            within=10.0, what="the new observation in the feed and the counts"))
        assert state["feed"][0].split()[1] == "observation"

        await page.screenshot(ARTIFACTS / "dashboard.png")
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000
