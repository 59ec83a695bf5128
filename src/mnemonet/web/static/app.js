// mnemonet dashboard: one WebSocket (/v1/ws) for live state, /v1/graph for the concept view, and the client API
// (POST /v1/retract, /v1/forget) for corrections, which the node allows or refuses by the token's scopes.
// The client token lives in the URL fragment (#key=...), which browsers never send to the server;
// it goes out as a bearer header on fetches and as ?key= on the WebSocket.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const RECONNECT_MS = [500, 1000, 2000, 5000];
const LABEL_CHARS = 22; // longest concept/predicate label drawn in the graph; the full text is in its tooltip
const LABEL_WIDTH = 76, LABEL_STEP = 14; // room one "contradicts" label takes; another closer is moved on
const LABEL_MOVES = 24; // steps a label may move to find room (then it stays where the last step put it)
const CENTER_CHARS = 14; // characters per line of the centre concept's name
const CENTER_LINES = 6; // lines of it drawn (84 characters); a longer name ends in "…", whole in its tooltip

const state = {
  node: null,
  members: new Map(),
  feed: [],
  stats: null,
  contradictions: [],
  concept: null,
  conceptChosen: false,
  attempts: 0,
};

// -- small helpers ---------------------------------------------------------------------
function $(id) { return document.getElementById(id); }

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function fragment() { return new URLSearchParams(location.hash.slice(1)); }
function clusterKey() { return fragment().get("key") || ""; }
// The memory space shown (#space=NAME); none: the token's first, as the node decides.
function currentSpace() { return fragment().get("space") || ""; }
function inSpace(path) {
  const space = currentSpace();
  return space ? `${path}${path.includes("?") ? "&" : "?"}space=${encodeURIComponent(space)}` : path;
}
function authHeaders() { const key = clusterKey(); return key ? { authorization: `Bearer ${key}` } : {}; }
function shortId(id) { return id.length > 10 ? id.slice(0, 8) + "…" : id; }
function clip(text, n = LABEL_CHARS) { return text.length > n ? text.slice(0, n - 1) + "…" : text; }
// A name as lines of at most `width` characters, split at spaces (a longer word is split itself).
function wrapLines(name, width) {
  const lines = [];
  for (const word of name.split(/\s+/).filter(Boolean)) {
    for (let i = 0; i < word.length; i += width) {
      const piece = word.slice(i, i + width);
      const last = lines.length ? lines[lines.length - 1] : null;
      if (i === 0 && last !== null && last.length + 1 + piece.length <= width) lines[lines.length - 1] = `${last} ${piece}`;
      else lines.push(piece);
    }
  }
  return lines;
}
// The centre concept's lines and the radius of the circle that holds them.
function centerLabel(name) {
  const lines = wrapLines(name, CENTER_CHARS);
  const shown = lines.length > CENTER_LINES ? [...lines.slice(0, CENTER_LINES - 1), clip(lines.slice(CENTER_LINES - 1).join(" "), CENTER_CHARS)] : lines;
  const [w, h] = [Math.max(...shown.map((l) => l.length)) * 7.4, shown.length * 15];
  return { shown, r: Math.max(34, Math.hypot(w / 2, h / 2) + 6) };
}
function predicateLabel(s) { return clip(`${s.negated ? "not " : ""}${s.predicate.replaceAll("_", " ")}`, 16); }
function pillWidth(label) { return 16 + label.length * 6.6; }
function sentence(s) { return `${s.subject} ${s.negated ? "not " : ""}${s.predicate.replaceAll("_", " ")} ${s.object}`; }

function setStatus(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.dataset.state = kind;
}

function showNotice(text) {
  const notice = $("notice");
  notice.hidden = !text;
  notice.textContent = text || "";
}

async function api(path) {
  const response = await fetch(inSpace(path), { headers: authHeaders() });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : `HTTP ${response.status}`);
  return body.result;
}

// -- live connection -------------------------------------------------------------------
function connect() {
  const key = clusterKey();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams();
  if (key) query.set("key", key);
  if (currentSpace()) query.set("space", currentSpace());
  const ws = new WebSocket(`${scheme}://${location.host}/v1/ws${query.toString() ? "?" + query : ""}`);
  ws.onopen = () => { state.attempts = 0; setStatus("live", "live"); $("auth").hidden = true; loadSpaces(); };
  ws.onmessage = (event) => handle(JSON.parse(event.data));
  ws.onclose = (event) => {
    if (event.code === 4401) {
      setStatus("token needed", "refused");
      $("auth").hidden = false;
      return;
    }
    if (event.code === 4403 || event.code === 4429) {
      setStatus("refused", "refused");
      showNotice(event.reason);
      return;
    }
    const wait = RECONNECT_MS[Math.min(state.attempts++, RECONNECT_MS.length - 1)];
    setStatus("reconnecting", "connecting");
    setTimeout(connect, wait);
  };
}

// The spaces this token may read, in the picker; it shows only when there is more than one.
async function loadSpaces() {
  const response = await fetch("/v1/spaces", {
    method: "POST", headers: { "content-type": "application/json", ...authHeaders() }, body: "{}" });
  if (!response.ok) return;
  const names = (await response.json()).result.map((s) => s.name);
  const shown = currentSpace() || names[0];
  $("space").replaceChildren(...names.map((name) => {
    const option = el("option", { value: name }, name);
    option.selected = name === shown;
    return option;
  }));
  $("space-pick").hidden = names.length < 2;
}

function handle(message) {
  switch (message.type) {
    case "snapshot":
      state.node = message.node;
      state.members = new Map(message.members.map((m) => [m.node_id, m]));
      state.feed = message.feed.slice().reverse();
      setStore(message);
      renderNode(); renderMembers(); renderFeed();
      chooseConcept();
      break;
    case "members":
      state.members = new Map(message.members.map((m) => [m.node_id, m]));
      renderMembers();
      break;
    case "event":
      state.feed.unshift(message.event);
      renderFeed(true);
      break;
    case "store":
      setStore(message);
      chooseConcept();
      if (state.concept) loadGraph(state.concept);
      break;
  }
}

function setStore(message) {
  state.stats = message.stats;
  state.contradictions = message.contradictions;
  showNotice(message.notice);
  renderCounts(); renderContradictions(); renderFooter();
}

// -- header, counts, footer ------------------------------------------------------------
function renderNode() {
  const node = state.node;
  $("node-info").textContent = `node ${shortId(node.node_id)} · ${node.url} · ${node.capabilities.join(", ") || "no capabilities"}`;
  $("node-info").title = node.node_id;
}

function total(value) {
  if (typeof value === "number") return value;
  if (value && typeof value === "object") return Object.values(value).reduce((a, v) => a + total(v), 0);
  return 0;
}

function renderCounts() {
  const graph = (state.stats && state.stats.graph) || {};
  const tiles = [
    ["Observations", graph.Observation],
    ["Statements", graph.Statement],
    ["Concepts", graph.Concept],
    ["Sources", graph.Source],
    ["Open contradictions", state.contradictions.length, state.contradictions.length > 0],
    ["Vectors", state.stats ? total(state.stats.vectors) : undefined],
  ];
  $("counts").replaceChildren(...tiles.map(([label, n, alert]) =>
    el("div", { class: alert ? "tile alert" : "tile", "data-count": label },
      el("div", { class: "n" }, n === undefined || n === null ? "–" : n),
      el("div", { class: "label" }, label))));
}

function renderFooter() {
  const stats = state.stats;
  $("footer").textContent = stats
    ? `language model: ${stats.llm_provider || "?"} · embeddings: ${stats.embedder || "?"}`
    : "";
}

// -- members ---------------------------------------------------------------------------
const STATE_BADGE = { alive: "good", suspect: "warn", dead: "bad", left: "grey" };

function renderMembers() {
  const rows = [...state.members.values()].sort((a, b) =>
    (b.local - a.local) || a.capabilities.join().localeCompare(b.capabilities.join()) || a.node_id.localeCompare(b.node_id));
  const live = rows.filter((m) => m.state === "alive" || m.state === "suspect").length;
  $("member-count").textContent = `${live} live`;
  $("members").replaceChildren(...rows.map((m) => {
    const load = m.load || {};
    const loadText = `${load.in_flight || 0} in flight` + (load.latency_ms != null ? ` · ${load.latency_ms} ms` : "");
    return el("tr", { class: m.state === "dead" || m.state === "left" ? "gone" : "", "data-node-id": m.node_id },
      el("td", { class: "id", title: `${m.node_id}\n${m.url}` }, shortId(m.node_id),
        m.local ? el("span", { class: "you" }, "(this node)") : ""),
      el("td", {}, el("div", { class: "chips" },
        ...(m.capabilities.length ? m.capabilities : ["client"]).map((c) => el("span", { class: "badge" }, c)))),
      el("td", {}, el("span", { class: `badge ${STATE_BADGE[m.state] || ""}`, "data-state": m.state }, m.state)),
      el("td", { class: "load" }, loadText));
  }));
}

// -- contradictions --------------------------------------------------------------------
function renderContradictions() {
  const list = $("contradictions");
  $("contradiction-count").textContent = state.contradictions.length || "";
  if (!state.contradictions.length) {
    list.replaceChildren(el("li", { class: "empty-note", style: "background:none;border:0;cursor:auto" }, "none open"));
    return;
  }
  list.replaceChildren(...state.contradictions.map((c) => {
    const item = el("li", { "data-contradiction": `${c.a.id} ${c.b.id}`, title: c.reason || "" },
      el("span", { class: "side" }, `“${sentence(c.a)}” `, el("span", { class: "src" }, `${c.a.source || "?"} · ${c.a.confidence.toFixed(2)}`)),
      el("span", { class: "vs" }, "CONTRADICTS"),
      el("span", { class: "side" }, `“${sentence(c.b)}” `, el("span", { class: "src" }, `${c.b.source || "?"} · ${c.b.confidence.toFixed(2)}`)));
    item.addEventListener("click", () => showConcept(c.a.subject));
    return item;
  }));
}

// -- feed ------------------------------------------------------------------------------
const FEED_BADGE = { claim: "badge warn", retraction: "badge grey", erasure: "badge bad" };

function renderFeed(flashFirst = false) {
  const feed = $("feed");
  if (!state.feed.length) {
    feed.replaceChildren(el("li", { class: "empty-note" }, "waiting for writes…"));
    return;
  }
  feed.replaceChildren(...state.feed.map((e, i) => {
    const when = e.ts ? new Date(e.ts * 1000).toLocaleTimeString([], { hour12: false }) : "";
    const texts = e.items && e.items.length ? e.items.map((it) => it.text).join(" · ") : e.ids.join(", ");
    return el("li", { class: flashFirst && i === 0 ? "new" : "", "data-event-type": e.type },
      el("time", {}, when),
      el("span", { class: FEED_BADGE[e.type] || "badge" }, e.type),
      el("span", { class: "text", title: `from ${e.origin}` }, texts));
  }));
}

// -- knowledge graph -------------------------------------------------------------------
function chooseConcept() {
  if (state.conceptChosen) return;
  const wanted = fragment().get("concept") || (state.contradictions[0] && state.contradictions[0].a.subject);
  if (wanted) { showConcept(wanted); return; }
  api("/v1/graph").then((r) => {
    fillConceptList(r.concepts);
    if (!state.conceptChosen && r.concepts.length) showConcept(r.concepts[0]);
  }).catch(() => {});
}

function fillConceptList(names) {
  $("concept-list").replaceChildren(...names.map((n) => el("option", { value: n })));
}

function showConcept(name) {
  state.concept = name;
  state.conceptChosen = true;
  $("outcome").textContent = ""; // the last correction was about another concept
  $("concept-input").value = name;
  // #concept=NAME: the view can be linked to; replaceState keeps the token beside it and fires no hashchange.
  const params = fragment();
  if (params.get("concept") !== name) {
    params.set("concept", name);
    history.replaceState(null, "", `#${params.toString()}`);
  }
  loadGraph(name);
  api("/v1/graph").then((r) => fillConceptList(r.concepts)).catch(() => {});
}

async function loadGraph(name) {
  try {
    const result = await api(`/v1/graph?concept=${encodeURIComponent(name)}`);
    if (name === state.concept) drawGraph(result.concept, result.statements);
  } catch (error) {
    drawMessage(`cannot load “${name}”: ${error.message}`);
  }
}

function drawMessage(text) {
  $("graph").replaceChildren(svg("text", { x: 380, y: 220, "text-anchor": "middle", class: "empty" }, text));
  $("statements").replaceChildren();
}

function ring(i, n, rx, ry) {
  const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
  return [380 + rx * Math.cos(angle), 220 + ry * Math.sin(angle)];
}

function drawGraph(center, statements) {
  if (!statements.length) { drawMessage(`nothing is known about “${center}” yet`); return; }
  const root = $("graph");
  const edges = svg("g"), conflicts = svg("g"), nodes = svg("g");
  const defs = svg("defs");
  defs.append(markerDef());
  root.replaceChildren(defs, edges, conflicts, nodes);

  const n = statements.length;
  const centerKey = center.toLowerCase();
  const places = new Map(); // concept name -> [x, y]
  places.set(centerKey, [380, 220]);
  const statementAt = new Map();
  statements.forEach((s, i) => {
    statementAt.set(s.id, ring(i, n, 175, 110));
    const other = s.subject.toLowerCase() === centerKey ? s.object : s.subject;
    if (!places.has(other.toLowerCase())) places.set(other.toLowerCase(), ring(i, n, 300, 190));
  });

  statements.forEach((s) => {
    const [sx, sy] = statementAt.get(s.id);
    const from = places.get(s.subject.toLowerCase()) || places.get(centerKey);
    const to = places.get(s.object.toLowerCase()) || places.get(centerKey);
    edges.append(svg("line", { x1: from[0], y1: from[1], x2: sx, y2: sy, class: `edge ${s.status}` }));
    edges.append(svg("line", { x1: sx, y1: sy, x2: to[0], y2: to[1], class: `edge ${s.status}`, "marker-end": "url(#arrow)" }));
  });

  const drawn = new Set();
  // What a "contradicts" label must not cover, as [x, y, half width, half height]: the centre circle, the
  // statement pills, and the labels placed before it.
  const centerR = centerLabel(center).r;
  const taken = [[380, 220, centerR, centerR]];
  statements.forEach((s) => {
    const [x, y] = statementAt.get(s.id);
    taken.push([x, y, pillWidth(predicateLabel(s)) / 2, 11]);
  });
  const clear = (x, y) => !taken.some(([tx, ty, hw, hh]) => Math.abs(tx - x) < hw + LABEL_WIDTH / 2 && Math.abs(ty - y) < hh + LABEL_STEP / 2);
  statements.forEach((s) => {
    for (const other of s.contradicted_by) {
      if (!statementAt.has(other) || drawn.has(`${other} ${s.id}`)) continue;
      drawn.add(`${s.id} ${other}`);
      const [x1, y1] = statementAt.get(s.id), [x2, y2] = statementAt.get(other);
      const [mx, my] = [(x1 + x2) / 2, (y1 + y2) / 2];
      const [cx, cy] = [mx + (mx - 380) * 0.6, my + (my - 220) * 0.6 - 30]; // bow outwards, away from the centre
      conflicts.append(svg("path", { d: `M${x1},${y1} Q${cx},${cy} ${x2},${y2}`, class: "conflict" }));
      // On a busy concept the curves bow to similar places: step a label away from the centre until it is clear.
      const lx = (mx + cx) / 2;
      let ly = (my + cy) / 2 - 4;
      const away = ly < 220 ? -LABEL_STEP : LABEL_STEP;
      for (let step = 0; step < LABEL_MOVES && !clear(lx, ly - 4); step++) ly += away;
      taken.push([lx, ly - 4, LABEL_WIDTH / 2, LABEL_STEP / 2]);
      conflicts.append(svg("text", { x: lx, y: ly, "text-anchor": "middle", class: "conflict-label" }, "contradicts"));
    }
  });

  for (const [key, [x, y]] of places) {
    const name = key === centerKey ? center : statements.map((s) => [s.subject, s.object]).flat().find((c) => c.toLowerCase() === key);
    const group = svg("g", { class: key === centerKey ? "concept center" : "concept", "data-concept": name });
    group.append(svg("title", {}, name));
    if (key === centerKey) {
      // The centre shows its whole name, wrapped, in a circle grown to hold it (up to CENTER_LINES lines).
      const { shown, r } = centerLabel(name);
      group.append(svg("circle", { cx: x, cy: y, r }));
      const label = svg("text", { x, y: y + 4 - (shown.length - 1) * 7.5, "text-anchor": "middle" });
      shown.forEach((line, i) => label.append(svg("tspan", { x, dy: i === 0 ? 0 : 15 }, line)));
      group.append(label);
    } else {
      group.append(svg("circle", { cx: x, cy: y, r: 7 }));
      group.append(svg("text", { x, y: y + (y >= 220 ? 20 : -12), "text-anchor": "middle" }, clip(name, LABEL_CHARS)));
    }
    if (key !== centerKey) group.addEventListener("click", () => showConcept(name));
    group.style.cursor = key === centerKey ? "default" : "pointer";
    nodes.append(group);
  }

  statements.forEach((s) => {
    const [x, y] = statementAt.get(s.id);
    const label = predicateLabel(s);
    const width = pillWidth(label);
    const group = svg("g", { class: `statement ${s.status}`, "data-statement": s.id });
    group.append(svg("title", {}, `${s.sentence} (${s.status}, confidence ${s.confidence.toFixed(2)})`));
    group.append(svg("rect", { x: x - width / 2, y: y - 11, width, height: 22, rx: 11 }));
    group.append(svg("text", { x, y: y + 4, "text-anchor": "middle" }, label));
    nodes.append(group);
  });

  $("statements").replaceChildren(...statements.map((s) => {
    const badge = s.status === "current" ? "" : el("span", { class: s.status === "contradicted" ? "badge bad" : "badge grey" }, s.status);
    return el("li", { class: s.status, "data-statement": s.id },
      el("span", { class: "sentence" }, s.sentence), badge,
      el("span", { class: "meta" }, `${s.source || "?"} · ${s.confidence.toFixed(2)}`), corrections(s));
  }));
}

// -- corrections -----------------------------------------------------------------------
// Each goes through the client API with the page's token: the node decides (write: what its own source said;
// admin of the space: anyone's, and erasure) and says why not. Every open dashboard redraws on the event it floods.
function corrections(s) {
  const button = (label, action, title, onClick) => {
    const b = el("button", { type: "button", "data-action": action, title }, label);
    b.addEventListener("click", onClick);
    return b;
  };
  return el("span", { class: "actions" },
    s.status === "retracted" ? "" : button("retract", "retract", "take it back, saying why (kept in the history)",
      () => retract(s)),
    s.observations.length ? button("forget observation", "forget-observation",
      "erase what was observed, and what derives only from it", () => forget(s, "observation")) : "",
    s.source ? button("forget source", "forget-source",
      `erase everything ${s.source} wrote, and what derives only from it`, () => forget(s, "source")) : "");
}

async function call(method, args) {
  const space = currentSpace();
  const response = await fetch(`/v1/${method}`, {
    method: "POST", headers: { "content-type": "application/json", ...authHeaders() },
    body: JSON.stringify(space ? { ...args, space } : args) });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : `HTTP ${response.status}`);
  return body.result;
}

async function correct(method, action, told) {
  const outcome = $("outcome");
  try {
    outcome.textContent = told(await action());
    outcome.dataset.state = "done";
  } catch (error) {
    outcome.textContent = `${method} refused: ${error.message}`;
    outcome.dataset.state = "refused";
  }
  if (state.concept) loadGraph(state.concept);
}

function retract(s) {
  const reason = prompt(`Retract “${s.sentence}” (said by ${s.source || "?"})? Say why:`);
  if (reason === null) return; // cancelled; an empty reason is the node's to refuse
  correct("retract", () => call("retract", { id: s.id, reason }),
    (r) => `retracted “${s.sentence}”${r.created ? "" : ` (already, by ${r.source})`}`);
}

function forget(s, what) {
  const erased = what === "source" ? `everything ${s.source} wrote` : `the observation behind “${s.sentence}”`;
  if (!confirm(`Erase ${erased}, and what derives only from it? This cannot be undone.`)) return;
  const calls = what === "source" ? [{ source: s.source }] : s.observations.map((id) => ({ observation_id: id }));
  correct("forget", async () => { const reports = []; for (const args of calls) reports.push(await call("forget", args)); return reports; },
    (reports) => {
      const sum = (key) => reports.reduce((n, r) => n + r[key], 0);
      return `erased ${erased}: ${sum("observations")} observations, ${sum("statements")} statements`;
    });
}

function markerDef() {
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 16, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }));
  return marker;
}

// -- start -----------------------------------------------------------------------------
$("concept-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = $("concept-input").value.trim();
  if (name) showConcept(name);
});

$("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  const params = fragment();
  params.set("key", $("auth-key").value);
  location.hash = params.toString();
  connect();
});

// Another space: everything on the page is that space's, so start the page afresh in it.
$("space").addEventListener("change", (event) => {
  const params = fragment();
  params.set("space", event.target.value);
  params.delete("concept");
  location.hash = params.toString();
  location.reload();
});

// Another #concept=NAME typed or followed while the page is open.
window.addEventListener("hashchange", () => {
  const wanted = fragment().get("concept");
  if (wanted && wanted !== state.concept) showConcept(wanted);
});

renderFeed();
connect();
