// The LangGraph Server API side by side: the LangGraph.js reference server
// (@langchain/langgraph-api, the in-memory server behind `langgraph dev`)
// and a driver that measures any server speaking the API with the official
// SDK client (@langchain/langgraph-sdk). The Go benchmark in
// bench/serverpeer_test.go starts both and drives Trellis's server and the
// reference with the same driver, in one run.
//
//   node server.mjs serve PORT DIR
//     starts the reference server on 127.0.0.1:PORT with Chain3
//     (chain3graph.mjs) registered as "chain3" and the ReAct shape
//     (reactgraph.mjs) as "react", its files (the dev
//     server's JSON snapshots of its in-memory state) in DIR, no auth, no
//     tracing; it logs as `langgraph dev` does and runs until killed.
//   node server.mjs drive URL ASSISTANT SEQ CLIENTS PER_CLIENT STREAMS
//     against the server at URL, running ASSISTANT ("chain3" or "react"):
//     SEQ sequential stateless runs
//     (client.runs.wait), then CLIENTS concurrent clients doing
//     PER_CLIENT runs each, then STREAMS sequential streamed runs
//     (client.runs.stream, stream mode values), timing the first event
//     and the first values event of each; prints one JSON line: the
//     counts, the time each part took (ms), the driver's own CPU time over
//     the sequential and concurrent runs (ms), and every streamed run's times
//     to its first event and first values event (ms), so that the caller
//     can pool several passes.
import { Client } from "@langchain/langgraph-sdk";
import { fileURLToPath } from "node:url";

const [mode, ...args] = process.argv.slice(2);

async function serve(port, dir) {
  // No tracing, no LangSmith: nothing leaves 127.0.0.1.
  for (const k of ["LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING", "LANGCHAIN_TRACING_V2"]) {
    process.env[k] = "false";
  }
  delete process.env.LANGSMITH_API_KEY;
  delete process.env.LANGCHAIN_API_KEY;
  process.env.LANGGRAPH_API_URL = `http://127.0.0.1:${port}`;
  const { startServer } = await import("@langchain/langgraph-api/server");
  const { host } = await startServer({
    port: Number(port),
    host: "127.0.0.1",
    // `langgraph dev`'s default --n-jobs-per-worker.
    nWorkers: Number(process.env.BENCH_REFERENCE_WORKERS || 10),
    cwd: dir,
    graphs: {
      chain3: fileURLToPath(new URL("./chain3graph.mjs", import.meta.url)) + ":graph",
      react: fileURLToPath(new URL("./reactgraph.mjs", import.meta.url)) + ":graph",
    },
  });
  process.stderr.write(`reference server listening on ${host}\n`);
}

const now = () => performance.now();

// The input of each assistant's runs, and the check of their output.
const shapes = {
  chain3: {
    input: { n: 0 },
    check: (out) => out?.n === 3,
  },
  react: {
    input: { messages: [{ role: "user", content: "hi" }] },
    // The user's message, the model's call, the tool's answer, "done".
    check: (out) => Array.isArray(out?.messages) && out.messages.length === 4 && out.messages.at(-1).content === "done",
  },
};

async function runOnce(client, assistant) {
  const shape = shapes[assistant];
  const out = await client.runs.wait(null, assistant, { input: shape.input });
  if (!shape.check(out)) throw new Error(`run of ${assistant} returned ${JSON.stringify(out)}`);
}

async function drive(url, assistant, seq, clients, perClient, streams) {
  const client = new Client({ apiUrl: url, timeoutMs: 60_000 });
  // Warm up: the first runs on either server pay for lazy set-up.
  for (let i = 0; i < 3; i++) await runOnce(client, assistant);

  const cpu0 = process.cpuUsage();
  let start = now();
  for (let i = 0; i < seq; i++) await runOnce(client, assistant);
  const seqMs = now() - start;

  const pool = Array.from({ length: clients }, () => new Client({ apiUrl: url, timeoutMs: 60_000 }));
  start = now();
  await Promise.all(
    pool.map(async (c) => {
      for (let i = 0; i < perClient; i++) await runOnce(c, assistant);
    }),
  );
  const concMs = now() - start;
  const cpu = process.cpuUsage(cpu0);

  const first = [];
  const values = [];
  for (let i = 0; i < streams; i++) {
    const t0 = now();
    let sawFirst = false;
    let sawValues = false;
    for await (const ev of client.runs.stream(null, assistant, { input: shapes[assistant].input, streamMode: "values" })) {
      if (!sawFirst) {
        first.push(now() - t0);
        sawFirst = true;
      }
      if (ev.event === "values" && !sawValues) {
        values.push(now() - t0);
        sawValues = true;
      }
    }
    if (!sawValues) throw new Error("streamed run sent no values event");
  }

  return {
    seq_runs: seq,
    seq_ms: seqMs,
    conc_runs: clients * perClient,
    conc_ms: concMs,
    cpu_ms: (cpu.user + cpu.system) / 1000,
    first_ms: first,
    values_ms: values,
  };
}

switch (mode) {
  case "serve":
    await serve(...args);
    break;
  case "drive": {
    const [url, assistant, ...counts] = args;
    const [seq, clients, perClient, streams] = counts.map(Number);
    process.stdout.write(JSON.stringify(await drive(url, assistant, seq, clients, perClient, streams)) + "\n");
    break;
  }
  default:
    process.stderr.write("usage: node server.mjs serve PORT DIR | drive URL ASSISTANT SEQ CLIENTS PER_CLIENT STREAMS\n");
    process.exit(2);
}
