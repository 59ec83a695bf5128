"""The dashboard in headless Chromium against a real three-node network; saves test-artifacts/dashboard.png."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from cdp import browser_page
from livenet import CLUSTER_KEY, READ_TOKEN, NodeFactory, write_meeting_scenario
from netsupport import client_token, eventually, sees_all

from mnemonet.p2p.tokens import create_token
from mnemonet.service import MemoryService, SpacedMemory

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
        # The token stays in the address (the concept shown joins it as &concept=NAME once one is picked).
        assert state["status"] == "live"
        assert (await page.evaluate("location.hash")).split("&")[0] == f"#key={READ_TOKEN}"
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


CENTER = """JSON.stringify((() => {
  const g = document.querySelector("#graph .concept.center");
  if (!g) return null;
  const box = g.querySelector("text").getBBox();
  return {name: g.dataset.concept, r: g.querySelector("circle").r.baseVal.value, w: box.width, h: box.height,
          lines: [...g.querySelectorAll("tspan")].map(t => t.textContent),
          feed: [...document.querySelectorAll("#feed li[data-event-type]")].map(li => li.innerText)};
})())"""


async def test_a_deep_link_opens_a_long_named_concept_whole_and_earlier_writes_are_listed(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    """Issue 21: long names were cut in the centre circle, a concept could not be linked, and the feed was
    empty for writes made before the page opened."""
    store = await make_node({"store"}, providers={"store": service})
    for text in ("The quarterly infrastructure cost review committee prefers Tuesday mornings",
                 "The quarterly infrastructure cost review committee is chaired by Dana"):
        await store.client.observe(text, source="user")
    name = max((c.name for c in await store.client.get_concepts()), key=len)
    assert len(name) > 30, name  # long enough to need several lines

    async with browser_page(tmp_path / "chromium-profile") as page:
        await page.send("Page.navigate", {"url": f"{store.url}/ui#{urlencode({'key': READ_TOKEN, 'concept': name})}"})
        shown = json.loads(await page.wait_for(
            CENTER, lambda v: v is not None and json.loads(v) is not None and json.loads(v)["name"] == name
            and len(json.loads(v)["feed"]) == 2, within=15.0, what="the linked concept and the earlier writes"))
        assert " ".join(shown["lines"]) == name and len(shown["lines"]) > 1  # whole, wrapped, nothing cut
        assert all(len(line) <= 14 for line in shown["lines"])
        assert math.hypot(shown["w"] / 2, shown["h"] / 2) <= shown["r"], shown  # the text fits inside its circle
        assert all("quarterly infrastructure cost review committee" in f for f in shown["feed"])
        await page.screenshot(ARTIFACTS / "dashboard-long-concept.png")

        # Following another concept puts it in the address, next to the token; a new #concept= is followed.
        around = '[...document.querySelectorAll("#graph .concept:not(.center)")].map(g => g.dataset.concept)'
        other = json.loads(await page.evaluate(f"JSON.stringify({around})"))
        assert other, "the graph shows concepts around the centre"
        await page.evaluate(f'document.querySelector(\'#graph .concept[data-concept="{other[0]}"]\')'
                            '.dispatchEvent(new MouseEvent("click"))')
        fragment = await page.wait_for("location.hash", lambda v: parse_qs(v[1:]).get("concept") == [other[0]],
                                       within=10.0, what="the followed concept in the address")
        assert parse_qs(fragment[1:]) == {"key": [READ_TOKEN], "concept": [other[0]]}
        await page.evaluate(f"location.hash = {json.dumps(urlencode({'key': READ_TOKEN, 'concept': name}))}")
        await page.wait_for(CENTER, lambda v: json.loads(v)["name"] == name, within=10.0, what="back by hashchange")
    assert (ARTIFACTS / "dashboard-long-concept.png").stat().st_size > 10_000


LABELS = """JSON.stringify((() => {
  const box = (e) => { const b = e.getBBox(); return [b.x, b.y, b.width, b.height]; };
  return {labels: [...document.querySelectorAll("#graph text.conflict-label")].map(box),
          others: [...document.querySelectorAll("#graph .concept.center circle, #graph .statement rect")].map(box)};
})())"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


async def test_contradicts_labels_on_a_busy_concept_do_not_overlap(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    """Issue 21: on a concept with several open conflicts the "contradicts" labels were drawn over each other,
    and under the centre circle and the statement pills."""
    store = await make_node({"store"}, providers={"store": service})
    drinks = ("tea", "coffee", "water", "juice", "milk")
    said = {}
    for source, drink in zip(("alice", "bob", "carol", "dave", "erin"), drinks, strict=True):
        said[drink] = (await store.client.observe(f"Dana prefers {drink}", source=source)).statements[0]
    pairs = [(a, b) for i, a in enumerate(drinks) for b in drinks[i + 1:]]  # every one contradicts every other
    for a, b in pairs:
        await store.client.claim(f"{said[a].sentence()} contradicts {said[b].sentence()}", source="validator")
    async with browser_page(tmp_path / "chromium-profile") as page:
        await page.send("Page.navigate", {"url": f"{store.url}/ui#{urlencode({'key': READ_TOKEN, 'concept': 'dana'})}"})
        drawn = json.loads(await page.wait_for(
            LABELS, lambda v: v is not None and len(json.loads(v)["labels"]) == len(pairs),
            within=15.0, what="a contradicts label per pair"))
        await page.screenshot(ARTIFACTS / "dashboard-busy-concept.png")
    labels = drawn["labels"]
    assert len(drawn["others"]) == 1 + len(drinks)  # the centre and a pill per statement
    clashes = [(a, b) for i, a in enumerate(labels) for b in labels[i + 1:] + drawn["others"] if _overlap(a, b)]
    assert clashes == []


SPACE_STATE = """JSON.stringify({
  status: document.getElementById("status").textContent,
  picker: document.getElementById("space-pick").hidden ? null
    : [...document.querySelectorAll("#space option")].map(o => (o.selected ? "*" : "") + o.value),
  feed: [...document.querySelectorAll("#feed li[data-event-type]")].map(li => li.innerText).join(" | "),
  observations: (document.querySelector('[data-count="Observations"] .n') || {}).textContent,
})"""


async def test_the_space_picker_lists_the_tokens_spaces_and_shows_the_one_chosen(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    memory = SpacedMemory(service)
    for space in ("alpha", "beta"):
        await memory.create_space(space, by="ops")
    store = await make_node({"store"}, providers={"store": memory}, ui_refresh_interval=0.3)
    await memory.observe("the alpha team deploys on fridays", "user", space="alpha")
    for text in ("the beta team deploys on mondays", "the beta team owns billing"):
        await memory.observe(text, "user", space="beta")
    viewer = create_token(CLUSTER_KEY, "viewer", ["read"], 3600.0, spaces="alpha,beta")[0]

    async with browser_page(tmp_path / "chromium-profile") as page:
        await page.send("Page.navigate", {"url": f"{store.url}/ui#key={viewer}"})
        # While the page (re)loads, parts are not drawn yet: read them with .get.
        state = json.loads(await page.wait_for(
            SPACE_STATE, lambda v: v is not None and json.loads(v).get("picker") is not None
            and json.loads(v).get("observations") == "1", within=15.0, what="the picker and alpha's counts"))
        assert state["picker"] == ["*alpha", "beta"]  # the token's first space is shown first

        # The switch reloads the page: dispatch after this call returns so the reload cannot cut it short.
        await page.evaluate('setTimeout(() => { const s = document.getElementById("space"); s.value = "beta";'
                            ' s.dispatchEvent(new Event("change")); }, 0)')
        state = json.loads(await page.wait_for(
            SPACE_STATE, lambda v: v is not None and json.loads(v).get("observations") == "2"
            and json.loads(v).get("picker") == ["alpha", "*beta"], within=15.0, what="beta's counts after the switch"))
        assert state["status"] == "live" and "alpha team" not in state["feed"]
        assert "space=beta" in await page.evaluate("location.hash")


# The statements listed under the graph, the last correction's outcome, the feed.
ROWS = """JSON.stringify({
  status: document.getElementById("status").textContent,
  rows: Object.fromEntries([...document.querySelectorAll("#statements li[data-statement]")].map(li =>
    [li.dataset.statement, {status: li.className,
                            actions: [...li.querySelectorAll("button[data-action]")].map(b => b.dataset.action)}])),
  outcome: document.getElementById("outcome").textContent,
  feed: [...document.querySelectorAll("#feed li[data-event-type]")].map(li => li.innerText),
})"""


def _row(statement: str, status: str) -> Callable[[Any], bool]:
    def shown(value: Any) -> bool:
        return value is not None and json.loads(value)["rows"].get(statement, {}).get("status") == status
    return shown


def _click(statement: str, action: str) -> str:
    return (f'document.querySelector(\'#statements li[data-statement="{statement}"] '
            f'button[data-action="{action}"]\').click()')


async def test_a_statement_retracted_from_the_page_changes_the_answer_and_every_open_dashboard(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    """Issue 30, item 5: the dashboard was read-only; a wrong memory could only be corrected from a program."""
    store = await make_node({"store"}, providers={"store": service}, ui_refresh_interval=0.3)
    viewer = await make_node({"cli"}, seed=store, ui=True, ui_refresh_interval=0.3)
    await eventually(lambda: sees_all([store, viewer]), 3.0, "joined")
    wrong = (await store.client.observe("Dana's manager is Bob", source="alice")).statements[0]
    question = "who is Dana's manager?"
    assert "Bob" in (await store.client.remember(question)).text.partition("\n")[0]
    alice = client_token("read,write", name="alice")  # she takes back what she said herself
    reason = "the manager is Carol, not Bob"

    async with browser_page(tmp_path / "chromium-profile") as page:
        other = await page.new_tab()  # a second dashboard, on another node, with a read-only token
        await page.send("Page.navigate", {"url": f"{store.url}/ui#{urlencode({'key': alice, 'concept': 'Dana'})}"})
        await other.send("Page.navigate",
                         {"url": f"{viewer.url}/ui#{urlencode({'key': READ_TOKEN, 'concept': 'Dana'})}"})
        for tab in (page, other):
            state = json.loads(await tab.wait_for(ROWS, _row(wrong.id, "current"), within=15.0, what="the statement"))
            assert state["rows"][wrong.id]["actions"] == ["retract", "forget-observation", "forget-source"]

        # A read-only dashboard is told why not, and nothing changes.
        other.answer_dialogs("not mine to say")
        await other.evaluate(_click(wrong.id, "retract"))
        refused = json.loads(await other.wait_for(ROWS, lambda v: "refused" in json.loads(v)["outcome"],
                                                  within=10.0, what="the refusal"))
        assert refused["outcome"] == "retract refused: retract needs a token with the 'write' scope"
        assert refused["rows"][wrong.id]["status"] == "current"

        asked = page.answer_dialogs(reason)
        await page.evaluate(_click(wrong.id, "retract"))
        done = json.loads(await page.wait_for(ROWS, _row(wrong.id, "retracted"), within=10.0, what="the retraction"))
        assert asked == ["Retract “Dana has manager Bob” (said by alice)? Say why:"]
        assert done["outcome"] == "retracted “Dana has manager Bob”"
        assert done["rows"][wrong.id]["actions"] == ["forget-observation", "forget-source"]
        # The other dashboard, open on another node, shows it live: the statement struck through, the feed says why.
        seen = json.loads(await other.wait_for(
            ROWS, lambda v: _row(wrong.id, "retracted")(v)
            and any(f"retracted by alice: {reason}" in f for f in json.loads(v)["feed"]),
            within=10.0, what="the retraction on the other dashboard"))
        assert seen["feed"][0].split()[1] == "retraction"
        await other.screenshot(ARTIFACTS / "dashboard-retracted.png")

    answer = (await store.client.remember(question)).text.partition("\n")[0]
    assert "Bob" not in answer, answer


async def test_an_observation_forgotten_from_the_page_leaves_every_open_dashboard(
        make_node: NodeFactory, service: MemoryService, tmp_path: Path) -> None:
    store = await make_node({"store"}, providers={"store": service}, ui_refresh_interval=0.3)
    written = await store.client.observe("Erin lives on Elm Street", source="erin")
    [statement] = written.statements
    admin = client_token("read,write,admin", name="ops")  # erasure: an admin of the space

    async with browser_page(tmp_path / "chromium-profile") as page:
        other = await page.new_tab()
        for tab, token in ((page, admin), (other, READ_TOKEN)):
            await tab.send("Page.navigate", {"url": f"{store.url}/ui#{urlencode({'key': token, 'concept': 'Erin'})}"})
            await tab.wait_for(ROWS, lambda v: _row(statement.id, "current")(v)
                               and any("Elm Street" in f for f in json.loads(v)["feed"]),
                               within=15.0, what="the statement and its observation in the feed")

        cancelled = page.answer_dialogs("", accept=False)  # Cancel: nothing is erased
        await page.evaluate(_click(statement.id, "forget-observation"))
        assert cancelled == ["Erase the observation behind “Erin lives on Elm Street”, and what derives only from "
                             "it? This cannot be undone."]
        assert [i["id"] for i in await store.client.load([written.observation_id])] == [written.observation_id]

        page.answer_dialogs("")
        await page.evaluate(_click(statement.id, "forget-observation"))
        for tab in (page, other):
            gone = json.loads(await tab.wait_for(
                ROWS, lambda v: not json.loads(v)["rows"] and not any("Elm Street" in f for f in json.loads(v)["feed"])
                and any(f.split()[1:2] == ["erasure"] for f in json.loads(v)["feed"]),
                within=60.0, what="the statement and the erased text gone"))  # an erasure compacts: slow under load
            assert gone["status"] == "live"
        assert (await page.evaluate('document.getElementById("outcome").textContent')).startswith(
            "erased the observation behind “Erin lives on Elm Street”: 1 observations")
    assert await store.client.load([written.observation_id]) == []
