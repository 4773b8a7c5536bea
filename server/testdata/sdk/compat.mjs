// The compatibility suite: the official LangGraph SDK (pinned in
// .ci/package.json) drives a Trellis server through every endpoint the
// server serves, every stream mode, an interrupt and its resume, a
// reconnect in the middle of a stream, and each multitask strategy.
//
// Usage: node compat.mjs <server URL> <directory holding node_modules>
// It prints one line per check and a closing "N passed, N failed" line,
// and exits non-zero when a check failed. server_sdk_test.go runs it
// against the graphs of main_test.go.
import { createRequire } from "node:module";
import assert from "node:assert/strict";
import path from "node:path";

const [url, modules] = process.argv.slice(2);
const require = createRequire(path.join(modules, "node_modules", "resolve.js"));
const { Client } = require("@langchain/langgraph-sdk");

const client = new Client({ apiUrl: url, callerOptions: { maxRetries: 0 } });
const release = () => fetch(url + "/test/release", { method: "POST" });

let passed = 0;
let failed = 0;
async function check(name, fn) {
  let timer;
  try {
    await Promise.race([fn(), new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("timed out after 30s")), 30000); })]);
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err && err.stack ? err.stack : err}`);
  } finally {
    clearTimeout(timer);
  }
}

async function collect(iter) {
  const out = [];
  for await (const part of iter) out.push(part);
  return out;
}

const events = (parts) => parts.map((p) => p.event);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, cond) {
  const deadline = Date.now() + 20000;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

await check("assistants: search, count, get", async () => {
  const list = await client.assistants.search({ limit: 100 });
  const ids = list.map((a) => a.assistant_id).sort();
  assert.deepEqual(ids, ["ask", "boom", "chat", "echo", "hold"]);
  assert.equal(await client.assistants.count({ graphId: "echo" }), 1);
  const a = await client.assistants.get("echo");
  assert.equal(a.graph_id, "echo");
  const versions = await client.assistants.getVersions("echo");
  assert.equal(versions.length, 1);
});

await check("assistants: schemas, graph, subgraphs", async () => {
  const s = await client.assistants.getSchemas("echo");
  assert.equal(s.graph_id, "echo");
  assert.ok(s.state_schema.properties.notes, JSON.stringify(s.state_schema));
  assert.equal(s.input_schema.required, undefined);
  const g = await client.assistants.getGraph("echo");
  const nodes = g.nodes.map((n) => n.id);
  assert.deepEqual(nodes.sort(), ["__end__", "__start__", "a", "b"]);
  assert.ok(g.edges.some((e) => e.source === "a" && e.target === "b"));
  assert.ok(g.mermaid.includes("flowchart"));
  assert.deepEqual(await client.assistants.getSubgraphs("echo"), {});
});

let thread;
await check("threads: create, if_exists, get, update, search, count", async () => {
  thread = await client.threads.create({ metadata: { suite: "sdk", n: 1 }, graphId: "echo" });
  assert.equal(thread.status, "idle");
  const again = await client.threads.create({ threadId: thread.thread_id, ifExists: "do_nothing" });
  assert.equal(again.thread_id, thread.thread_id);
  await assert.rejects(client.threads.create({ threadId: thread.thread_id }), /409/);
  const got = await client.threads.get(thread.thread_id);
  assert.equal(got.metadata.suite, "sdk");
  const upd = await client.threads.update(thread.thread_id, { metadata: { n: 2 } });
  assert.equal(upd.metadata.n, 2);
  const found = await client.threads.search({ metadata: { suite: "sdk" } });
  assert.equal(found.length, 1);
  assert.equal(await client.threads.count({ metadata: { suite: "sdk" } }), 1);
  const idle = await client.threads.search({ status: "idle", metadata: { n: 2 } });
  assert.equal(idle.length, 1);
});

await check("runs: wait, state, history, state at a checkpoint, state update", async () => {
  const values = await client.runs.wait(thread.thread_id, "echo", { input: { notes: ["hi"] } });
  assert.deepEqual(values.notes, ["hi", "a:hi", "b:a:hi"]);
  const st = await client.threads.getState(thread.thread_id);
  assert.deepEqual(st.next, []);
  const hist = await client.threads.getHistory(thread.thread_id, { limit: 10 });
  assert.equal(hist.length, 3);
  const first = hist[2].checkpoint.checkpoint_id;
  const at = await client.threads.getState(thread.thread_id, first);
  assert.deepEqual(at.values.notes, ["hi"]);
  assert.deepEqual(at.next, ["a"]);
  const before = await client.threads.getHistory(thread.thread_id, { before: { checkpoint_id: hist[1].checkpoint.checkpoint_id } });
  assert.equal(before.length, 1);
  const res = await client.threads.updateState(thread.thread_id, { values: { notes: ["edited"] }, asNode: "a" });
  assert.ok(res.checkpoint.checkpoint_id);
  const after = await client.threads.getState(thread.thread_id);
  assert.deepEqual(after.next, ["b"]);
  assert.equal(after.values.notes.at(-1), "edited");
});

await check("threads: copy and delete", async () => {
  const copy = await client.threads.copy(thread.thread_id);
  assert.notEqual(copy.thread_id, thread.thread_id);
  const st = await client.threads.getState(copy.thread_id);
  assert.equal(st.values.notes.at(-1), "edited");
  await client.threads.delete(copy.thread_id);
  await assert.rejects(client.threads.get(copy.thread_id), /404/);
});

await check("runs: create, join, list, get, delete", async () => {
  const run = await client.runs.create(thread.thread_id, "echo", { input: { notes: ["bg"] }, metadata: { tag: "x" } });
  assert.ok(["pending", "running"].includes(run.status), run.status);
  const values = await client.runs.join(thread.thread_id, run.run_id);
  assert.equal(values.notes.at(-1), "b:a:bg");
  const got = await client.runs.get(thread.thread_id, run.run_id);
  assert.equal(got.status, "success");
  assert.equal(got.metadata.tag, "x");
  assert.equal(got.assistant_id, "echo");
  const list = await client.runs.list(thread.thread_id);
  assert.ok(list.some((r) => r.run_id === run.run_id));
  await client.runs.delete(thread.thread_id, run.run_id);
  await assert.rejects(client.runs.get(thread.thread_id, run.run_id), /404/);
});

await check("stream modes: values, updates, custom, debug, events", async () => {
  const parts = await collect(client.runs.stream(thread.thread_id, "echo", {
    input: { notes: ["s"] }, streamMode: ["values", "updates", "custom", "debug", "events"],
  }));
  const names = events(parts);
  assert.equal(names[0], "metadata");
  assert.ok(names.includes("values") && names.includes("updates") && names.includes("custom"), names.join());
  assert.ok(names.includes("debug") && names.includes("events"), names.join());
  const updates = parts.filter((p) => p.event === "updates").map((p) => p.data);
  assert.deepEqual(updates[0], { a: { notes: ["a:s"] } });
  const custom = parts.find((p) => p.event === "custom");
  assert.deepEqual(custom.data, { done: 1 });
  const debugTypes = new Set(parts.filter((p) => p.event === "debug").map((p) => p.data.type));
  assert.ok(debugTypes.has("checkpoint") && debugTypes.has("task") && debugTypes.has("task_result"), [...debugTypes].join());
  const ev = parts.filter((p) => p.event === "events").map((p) => p.data.event);
  assert.ok(ev.includes("on_chain_start") && ev.includes("on_chain_end"), ev.join());
  assert.ok(parts.filter((p) => p.id !== undefined).length > 0, "events carry IDs");
});

await check("stream modes: messages and messages-tuple, token by token", async () => {
  const t = await client.threads.create();
  const parts = await collect(client.runs.stream(t.thread_id, "chat", {
    input: { messages: [{ type: "human", content: "hello sdk" }] }, streamMode: ["messages-tuple", "messages"], ifNotExists: "create",
  }));
  const tuples = parts.filter((p) => p.event === "messages");
  assert.ok(tuples.length > 1, "several chunks");
  assert.equal(tuples.map((p) => p.data[0].content).join(""), "echo: hello sdk");
  assert.equal(tuples[0].data[1].langgraph_node, "agent");
  assert.ok(parts.some((p) => p.event === "messages/metadata"));
  const partial = parts.filter((p) => p.event === "messages/partial").at(-1);
  assert.equal(partial.data[0].content, "echo: hello sdk");
  const complete = parts.filter((p) => p.event === "messages/complete").flatMap((p) => p.data);
  assert.ok(complete.some((m) => m.type === "ai" && m.content === "echo: hello sdk"));
  const st = await client.threads.getState(t.thread_id);
  assert.deepEqual(st.values.messages.map((m) => m.type), ["human", "ai"]);
});

await check("stream: subgraphs flag accepted", async () => {
  const parts = await collect(client.runs.stream(thread.thread_id, "echo", { input: { notes: ["g"] }, streamMode: "updates", streamSubgraphs: true }));
  assert.ok(events(parts).includes("updates"));
});

await check("interrupt surfaced, resumed by value and by ID", async () => {
  const t = await client.threads.create();
  const parts = await collect(client.runs.stream(t.thread_id, "ask", { input: { notes: ["q"] }, streamMode: ["values", "updates"] }));
  const intr = parts.filter((p) => p.event === "values" && p.data.__interrupt__).at(-1);
  assert.ok(intr, events(parts).join());
  assert.deepEqual(intr.data.__interrupt__[0].value, { question: "a note?" });
  assert.ok(parts.some((p) => p.event === "updates" && p.data.__interrupt__));
  const th = await client.threads.get(t.thread_id);
  assert.equal(th.status, "interrupted");
  assert.equal(Object.values(th.interrupts).flat()[0].id, intr.data.__interrupt__[0].id);
  let values = await client.runs.wait(t.thread_id, "ask", { command: { resume: "one" } });
  assert.deepEqual(values.notes, ["q", "note:one"]);
  values = await client.runs.wait(t.thread_id, "ask", { input: { notes: ["q2"] } });
  const id = values.__interrupt__[0].id;
  values = await client.runs.wait(t.thread_id, "ask", { command: { resume: { [id]: "two" } } });
  assert.deepEqual(values.notes, ["q", "note:one", "q2", "note:two"]);
});

await check("reconnect mid-stream with Last-Event-ID", async () => {
  const t = await client.threads.create();
  const run = await client.runs.create(t.thread_id, "hold", { input: { notes: ["r"] }, streamMode: ["values", "updates"] });
  const ac = new AbortController();
  const seen = [];
  try {
    for await (const part of client.runs.joinStream(t.thread_id, run.run_id, { signal: ac.signal })) {
      seen.push(part);
      if (part.event === "updates") { ac.abort(); break; }
    }
  } catch (err) {
    if (err.name !== "AbortError") throw err;
  }
  const last = seen.filter((p) => p.id !== undefined).at(-1);
  assert.ok(last, events(seen).join());
  await release();
  const rest = await collect(client.runs.joinStream(t.thread_id, run.run_id, { lastEventId: last.id }));
  assert.ok(rest.every((p) => p.event !== "metadata"), "a resumed stream does not start over");
  assert.ok(rest.every((p) => p.id === undefined || Number(p.id) > Number(last.id)), "nothing already seen");
  const updates = [...seen, ...rest].filter((p) => p.event === "updates").map((p) => Object.keys(p.data)[0]);
  assert.deepEqual(updates, ["a", "hold", "b"]);
});

async function holding(threadId) {
  const run = await client.runs.create(threadId, "hold", { input: { notes: ["1"] } });
  await until("the held run to reach its gate", async () => (await (await fetch(`${url}/test/holding/${threadId}`)).json()) > 0);
  return run;
}

await check("multitask strategy: reject", async () => {
  const t = await client.threads.create();
  await holding(t.thread_id);
  await assert.rejects(client.runs.create(t.thread_id, "echo", { multitaskStrategy: "reject" }), /422/);
  await release();
  await until("the held run to end", async () => (await client.threads.get(t.thread_id)).status === "idle");
});

await check("multitask strategy: enqueue", async () => {
  const t = await client.threads.create();
  const first = await holding(t.thread_id);
  const second = await client.runs.create(t.thread_id, "echo", { input: { notes: ["2"] }, multitaskStrategy: "enqueue" });
  assert.equal(second.status, "pending");
  await release();
  const values = await client.runs.join(t.thread_id, second.run_id);
  assert.deepEqual(values.notes, ["1", "a:1", "hold:a:1", "b:hold:a:1", "2", "a:2", "b:a:2"]);
  assert.equal((await client.runs.get(t.thread_id, first.run_id)).status, "success");
});

await check("multitask strategy: interrupt", async () => {
  const t = await client.threads.create();
  const first = await holding(t.thread_id);
  const values = await client.runs.wait(t.thread_id, "echo", { input: { notes: ["2"] }, multitaskStrategy: "interrupt" });
  assert.deepEqual(values.notes, ["1", "a:1", "2", "a:2", "b:a:2"], "what the first run checkpointed is kept");
  assert.equal((await client.runs.get(t.thread_id, first.run_id)).status, "interrupted");
});

await check("multitask strategy: rollback", async () => {
  const t = await client.threads.create();
  const first = await holding(t.thread_id);
  const values = await client.runs.wait(t.thread_id, "echo", { input: { notes: ["2"] }, multitaskStrategy: "rollback" });
  assert.deepEqual(values.notes, ["2", "a:2", "b:a:2"], "the first run is undone");
  assert.equal((await client.runs.get(t.thread_id, first.run_id)).status, "interrupted");
});

await check("cancel: interrupt and rollback, one and many", async () => {
  const t = await client.threads.create();
  const run = await holding(t.thread_id);
  await client.runs.cancel(t.thread_id, run.run_id, true, "interrupt");
  assert.equal((await client.runs.get(t.thread_id, run.run_id)).status, "interrupted");
  const st = await client.threads.getState(t.thread_id);
  assert.deepEqual(st.values.notes, ["1", "a:1"]);
  const again = await holding(t.thread_id);
  await client.runs.cancel(t.thread_id, again.run_id, true, "rollback");
  assert.deepEqual((await client.threads.getState(t.thread_id)).values.notes, ["1", "a:1"]);
  const third = await holding(t.thread_id);
  await client.runs.cancelMany({ threadId: t.thread_id, runIds: [third.run_id], action: "interrupt" });
  await until("the cancelled run to end", async () => (await client.runs.get(t.thread_id, third.run_id)).status === "interrupted");
});

await check("on_disconnect cancel stops the run when the client leaves", async () => {
  const t = await client.threads.create();
  const ac = new AbortController();
  let runId;
  try {
    for await (const part of client.runs.stream(t.thread_id, "hold", { input: { notes: ["d"] }, onDisconnect: "cancel", signal: ac.signal })) {
      if (part.event === "metadata") { runId = part.data.run_id; ac.abort(); }
    }
  } catch (err) {
    if (err.name !== "AbortError") throw err;
  }
  await until("the run to be cancelled", async () => (await client.runs.get(t.thread_id, runId)).status === "interrupted");
});

await check("stateless runs: wait, stream, batch", async () => {
  const values = await client.runs.wait(null, "echo", { input: { notes: ["x"] } });
  assert.deepEqual(values.notes, ["x", "a:x", "b:a:x"]);
  const parts = await collect(client.runs.stream(null, "echo", { input: { notes: ["y"] }, streamMode: "values" }));
  assert.deepEqual(parts.at(-1).data.notes, ["y", "a:y", "b:a:y"]);
  const batch = await client.runs.createBatch([{ assistantId: "echo", input: { notes: ["z"] } }]);
  assert.equal(batch.length, 1);
});

await check("crons: create, search, delete", async () => {
  const c = await client.crons.createForThread(thread.thread_id, "echo", { schedule: "@hourly", input: { notes: ["c"] } });
  assert.ok(c.cron_id);
  const found = await client.crons.search({ threadId: thread.thread_id });
  assert.equal(found.length, 1);
  await client.crons.delete(c.cron_id);
  assert.equal((await client.crons.search({ threadId: thread.thread_id })).length, 0);
});

await check("a failed run: wait raises, stream ends with an error event", async () => {
  await assert.rejects(client.runs.wait(null, "boom", { input: {} }), /kaboom/);
  const parts = await collect(client.runs.stream(null, "boom", { input: {} }));
  const err = parts.at(-1);
  assert.equal(err.event, "error");
  assert.match(err.data.message, /kaboom/);
});

await check("store: put, get, search by filter, list namespaces, delete", async () => {
  await client.store.putItem(["users", "ana", "memories"], "m1", { text: "likes tea", n: 1 });
  await client.store.putItem(["users", "ana", "memories"], "m2", { text: "lives in Porto", n: 2 });
  await client.store.putItem(["users", "bob", "prefs"], "p1", { theme: "dark" }, { ttl: 5 });
  const item = await client.store.getItem(["users", "ana", "memories"], "m1");
  assert.deepEqual(item.value, { text: "likes tea", n: 1 });
  assert.deepEqual(item.namespace, ["users", "ana", "memories"]);
  assert.ok(item.createdAt && item.updatedAt);
  assert.equal(await client.store.getItem(["users", "ana", "memories"], "nope"), null);
  const found = await client.store.searchItems(["users", "ana"], { filter: { n: { $gt: 1 } } });
  assert.deepEqual(found.items.map((i) => i.key), ["m2"]);
  const eq = await client.store.searchItems(["users"], { filter: { theme: "dark" } });
  assert.deepEqual(eq.items.map((i) => i.key), ["p1"]);
  const ns = await client.store.listNamespaces({ prefix: ["users"] });
  assert.deepEqual(ns.namespaces, [["users", "ana", "memories"], ["users", "bob", "prefs"]]);
  const short = await client.store.listNamespaces({ prefix: ["users"], maxDepth: 2 });
  assert.deepEqual(short.namespaces, [["users", "ana"], ["users", "bob"]]);
  const bySuffix = await client.store.listNamespaces({ suffix: ["prefs"] });
  assert.deepEqual(bySuffix.namespaces, [["users", "bob", "prefs"]]);
  await client.store.deleteItem(["users", "ana", "memories"], "m1");
  assert.equal(await client.store.getItem(["users", "ana", "memories"], "m1"), null);
});

await check("errors: unknown thread, unknown assistant", async () => {
  await assert.rejects(client.threads.get("no-such-thread"), /404/);
  await assert.rejects(client.runs.wait(null, "no-such-assistant", {}), /404/);
});

await check("threads: delete", async () => {
  await client.threads.delete(thread.thread_id);
  await assert.rejects(client.threads.get(thread.thread_id), /404/);
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
