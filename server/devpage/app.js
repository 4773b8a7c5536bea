// The dev page: it speaks the same API as any client (the server's own
// endpoints, relative to the page), with no build step and no library.
"use strict";

const api = new URL(document.querySelector('meta[name="api-base"]').content, location.href);
const $ = (id) => document.getElementById(id);
const state = { assistant: null, thread: null, run: null, interrupts: [], graph: null };

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const tok = $("token").value || sessionStorage.getItem("trellis-token") || "";
  if (tok) h["Authorization"] = "Bearer " + tok;
  return h;
}

async function call(method, path, body) {
  const resp = await fetch(new URL(path.replace(/^\//, ""), api), {
    method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (resp.status === 204 || resp.status === 202) return null;
  const data = await resp.json().catch(() => null);
  if (!resp.ok) throw new Error((data && data.detail) || resp.status + " " + resp.statusText);
  return data;
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function show(msg, isError) {
  $("status").textContent = msg;
  $("status").className = isError ? "error" : "";
}

const json = (v) => JSON.stringify(v, null, 1);

// The graph, laid out in layers from __start__ (longest path, back edges
// ignored), drawn as SVG.
function drawGraph(g) {
  const layer = { __start__: 0 };
  const order = ["__start__"];
  for (let i = 0; i < order.length; i++) {
    for (const e of g.edges) {
      if (e.source === order[i] && !(e.target in layer)) {
        layer[e.target] = layer[e.source] + 1;
        order.push(e.target);
      }
    }
  }
  for (const n of g.nodes) if (!(n.id in layer)) { layer[n.id] = 1; order.push(n.id); }
  const rows = {};
  for (const id of order) (rows[layer[id]] ||= []).push(id);
  const pos = {};
  const W = 110, H = 34, GX = 30, GY = 50;
  let width = 0;
  for (const [y, ids] of Object.entries(rows)) {
    ids.forEach((id, x) => { pos[id] = { x: 10 + x * (W + GX), y: 10 + Number(y) * (H + GY) }; });
    width = Math.max(width, ids.length * (W + GX));
  }
  const height = (Object.keys(rows).length) * (H + GY);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width + 20} ${height}`);
  svg.setAttribute("width", "100%");
  const mk = (tag, attrs) => { const e = document.createElementNS(ns, tag); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); return e; };
  for (const e of g.edges) {
    const a = pos[e.source], b = pos[e.target];
    if (!a || !b) continue;
    const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
    const back = y2 <= y1;
    const d = back ? `M${x1},${a.y} C${x1 + 80},${a.y - 40} ${x2 + 80},${y2 + H + 40} ${x2},${y2 + H}` : `M${x1},${y1} L${x2},${y2}`;
    svg.append(mk("path", { d, class: "edge" + (e.conditional ? " conditional" : ""), "marker-end": "url(#arrow)" }));
    if (e.data) {
      const t = mk("text", { x: (x1 + x2) / 2 + 4, y: (y1 + y2) / 2, class: "edge-label" });
      t.textContent = e.data;
      svg.append(t);
    }
  }
  const defs = mk("defs", {});
  const marker = mk("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
  marker.append(mk("path", { d: "M0,0 L10,5 L0,10 z", fill: "#556" }));
  defs.append(marker);
  svg.prepend(defs);
  for (const n of g.nodes) {
    const p = pos[n.id];
    const grp = mk("g", { class: "node" + (n.id.startsWith("__") ? " terminal" : ""), "data-node": n.id });
    grp.append(mk("rect", { x: p.x, y: p.y, width: W, height: H, rx: 8 }));
    const t = mk("text", { x: p.x + W / 2, y: p.y + H / 2 });
    t.textContent = n.id === "__start__" ? "start" : n.id === "__end__" ? "end" : n.id;
    grp.append(t);
    svg.append(grp);
  }
  $("graph").replaceChildren(svg);
  $("mermaid").textContent = g.mermaid || "";
}

function highlight(node) {
  for (const g of document.querySelectorAll("#graph .node")) g.classList.toggle("active", g.dataset.node === node);
}

async function loadAssistants() {
  const list = await call("POST", "/assistants/search", { limit: 100 });
  const sel = $("assistant");
  sel.replaceChildren(...list.map((a) => el("option", { value: a.assistant_id }, a.name || a.assistant_id)));
  const want = new URLSearchParams(location.search).get("assistant");
  if (want) sel.value = want;
  await selectAssistant(sel.value);
}

async function selectAssistant(id) {
  state.assistant = id;
  state.graph = await call("GET", `/assistants/${encodeURIComponent(id)}/graph`);
  drawGraph(state.graph);
  const schemas = await call("GET", `/assistants/${encodeURIComponent(id)}/schemas`);
  state.messages = !!(schemas.state_schema && schemas.state_schema.properties && schemas.state_schema.properties.messages);
}

async function loadThreads() {
  const list = await call("POST", "/threads/search", { limit: 50 });
  $("threads").replaceChildren(...list.map((t) => el("li", { class: t.thread_id === state.thread ? "current" : "" },
    el("button", { type: "button", onclick: () => selectThread(t.thread_id) }, `${t.thread_id.slice(0, 8)}… ${t.status}`))));
}

async function selectThread(id) {
  state.thread = id;
  $("thread-id").textContent = "on thread " + id;
  await Promise.all([loadThreads(), loadHistory(), loadRuns()]);
  const th = await call("GET", `/threads/${encodeURIComponent(id)}`);
  const ints = Object.values(th.interrupts || {}).flat();
  if (ints.length) askFor(ints); else $("interrupt-form").hidden = true;
}

async function loadHistory() {
  if (!state.thread) return;
  const hist = await call("POST", `/threads/${encodeURIComponent(state.thread)}/history`, { limit: 50 });
  $("history").replaceChildren(...hist.map((h) => el("li", { "data-checkpoint": h.checkpoint.checkpoint_id },
    el("div", {}, `step ${h.metadata.step} (${h.metadata.source}); next: ${h.next.join(", ") || "—"} `,
      el("button", { type: "button", class: "fork", onclick: () => fork(h.checkpoint.checkpoint_id) }, "Fork and re-run")),
    el("pre", {}, json(h.values)))));
}

async function loadRuns() {
  if (!state.thread) return;
  const list = await call("GET", `/threads/${encodeURIComponent(state.thread)}/runs?limit=20`);
  $("runs").replaceChildren(...list.map((r) => el("li", {}, `${r.run_id.slice(0, 8)}… ${r.status}`)));
}

function askFor(interrupts) {
  state.interrupts = interrupts;
  $("interrupt-value").textContent = json(interrupts.map((i) => i.value));
  $("interrupt-form").hidden = false;
  $("answer").focus();
}

function parse(text) {
  try { return JSON.parse(text); } catch { return text; }
}

// run streams a run on the current thread and shows it as it goes.
async function run(body) {
  if (!state.thread) await newThread();
  $("interrupt-form").hidden = true;
  $("tokens").textContent = "";
  $("steps").replaceChildren();
  $("tools").replaceChildren();
  $("run").disabled = true;
  show("running…");
  const toolItems = {};
  let interrupts = null, failed = null;
  try {
    const resp = await fetch(new URL(`threads/${encodeURIComponent(state.thread)}/runs/stream`, api), {
      method: "POST", headers: headers(true),
      body: JSON.stringify({ assistant_id: state.assistant, stream_mode: ["updates", "messages-tuple", "events", "values"], stream_subgraphs: true, ...body }),
    });
    if (!resp.ok) throw new Error(((await resp.json().catch(() => null)) || {}).detail || resp.statusText);
    $("cancel").disabled = false;
    for await (const ev of events(resp.body)) {
      const [mode] = ev.event.split("|");
      if (ev.event === "metadata") state.run = ev.data.run_id;
      else if (mode === "messages") $("tokens").append(ev.data[0].content || "");
      else if (mode === "updates" && ev.data.__interrupt__) interrupts = ev.data.__interrupt__;
      else if (mode === "updates") {
        for (const [node, writes] of Object.entries(ev.data)) {
          highlight(node);
          $("steps").append(el("li", {}, el("strong", {}, ev.event === "updates" ? node : `${ev.event.slice(8)} / ${node}`), el("pre", {}, json(writes))));
        }
      } else if (mode === "events" && ev.data.event === "on_tool_start") {
        const li = el("li", {}, `${ev.data.name} ${JSON.stringify(ev.data.data.input)} …`);
        toolItems[ev.data.data.tool_call_id] = li;
        $("tools").append(li);
      } else if (mode === "events" && ev.data.event === "on_tool_end") {
        const li = toolItems[ev.data.data.tool_call_id];
        if (li) li.textContent = li.textContent.replace(/ …$/, ` — ${ev.data.data.duration_ms.toFixed(1)} ms`);
      } else if (ev.event === "error") failed = ev.data.message;
    }
  } catch (err) {
    failed = err.message;
  } finally {
    $("run").disabled = false;
    $("cancel").disabled = true;
    highlight(null);
  }
  if (failed) show("failed: " + failed, true);
  else if (interrupts) { show("waiting for input"); askFor(interrupts); }
  else show("done");
  await Promise.all([loadHistory(), loadRuns(), loadThreads()]);
}

async function* events(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = "", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (event) yield { event, data: JSON.parse(data) };
    }
  }
}

async function newThread() {
  const t = await call("POST", "/threads", { metadata: { graph_id: state.assistant } });
  await selectThread(t.thread_id);
}

async function fork(checkpoint) {
  await run({ checkpoint_id: checkpoint, input: null });
}

$("run-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("input").value.trim();
  let input = null;
  if (text) {
    const v = parse(text);
    input = typeof v === "object" && v !== null && !Array.isArray(v) ? v : state.messages ? { messages: [{ type: "human", content: text }] } : v;
  }
  run({ input }).catch((err) => show(err.message, true));
});
$("interrupt-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const answer = parse($("answer").value);
  const resume = state.interrupts.length > 1 ? Object.fromEntries(state.interrupts.map((i) => [i.id, answer])) : answer;
  $("answer").value = "";
  run({ command: { resume } }).catch((err) => show(err.message, true));
});
$("cancel").addEventListener("click", () => {
  if (state.run) call("POST", `/threads/${encodeURIComponent(state.thread)}/runs/${state.run}/cancel`).catch((err) => show(err.message, true));
});
$("new-thread").addEventListener("click", () => newThread().catch((err) => show(err.message, true)));
$("assistant").addEventListener("change", (e) => selectAssistant(e.target.value).catch((err) => show(err.message, true)));
$("token").addEventListener("change", (e) => { sessionStorage.setItem("trellis-token", e.target.value); init(); });

async function init() {
  try {
    await loadAssistants();
    await loadThreads();
    show("ready");
  } catch (err) {
    show(err.message, true);
  }
}
init();
// Threads and their runs, live: refreshed while the page is visible.
setInterval(() => {
  if (document.visibilityState === "visible" && $("run").disabled === false) {
    loadThreads().catch(() => {});
    loadRuns().catch(() => {});
  }
}, 3000);
