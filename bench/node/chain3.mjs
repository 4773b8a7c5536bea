// Chain3 on LangGraph.js with a checkpointer: three nodes in a row, each
// incrementing a number, on a fresh thread per run, as
// BenchmarkChain3Checkpoint runs it on Trellis. The Go benchmarks in bench/
// start this script and drive it (see peer_test.go).
//
//   node chain3.mjs serve STORE DURABILITY
//     sets the store up, runs once, prints {"ready":true}, then reads
//     commands from stdin, one JSON object a line:
//       {"runs":N}  runs Chain3 N times, prints {"ns":elapsed,"runs":N}
//     and exits when stdin closes.
//   node chain3.mjs count STORE DURABILITY
//     prints {"ready":true}, then for each {"runs":N} on stdin opens the
//     store (setting it up), runs Chain3 N times, closes the store and
//     prints {"runs":N}: bench counts the database's transactions around
//     each command.
//
// STORE is memory, sqlite or postgres; DURABILITY is sync, async or exit
// (LangGraph.js's default is async). SQLite's file is BENCH_SQLITE_PATH;
// Postgres is BENCH_POSTGRES_URL, in the schema BENCH_POSTGRES_SCHEMA.
import { createInterface } from "node:readline";
import { Annotation, END, MemorySaver, START, StateGraph } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import Database from "better-sqlite3";

const [mode, store, durability] = process.argv.slice(2);

async function openSaver() {
  switch (store) {
    case "memory":
      return { saver: new MemorySaver(), close: async () => {} };
    case "sqlite": {
      // The same settings as Trellis's SQLite store: write-ahead log,
      // synchronous=NORMAL (better-sqlite3's default would be FULL).
      const db = new Database(process.env.BENCH_SQLITE_PATH);
      db.pragma("journal_mode = WAL");
      db.pragma("synchronous = NORMAL");
      const saver = new SqliteSaver(db);
      saver.setup();
      return { saver, close: async () => db.close() };
    }
    case "postgres": {
      const saver = PostgresSaver.fromConnString(process.env.BENCH_POSTGRES_URL, {
        schema: process.env.BENCH_POSTGRES_SCHEMA || "public",
      });
      await saver.setup();
      return { saver, close: () => saver.end() };
    }
  }
  throw new Error(`unknown store ${JSON.stringify(store)} (want memory, sqlite or postgres)`);
}

function chain3(checkpointer) {
  const State = Annotation.Root({ n: Annotation() });
  const incr = (s) => ({ n: s.n + 1 });
  return new StateGraph(State)
    .addNode("n0", incr)
    .addNode("n1", incr)
    .addNode("n2", incr)
    .addEdge(START, "n0")
    .addEdge("n0", "n1")
    .addEdge("n1", "n2")
    .addEdge("n2", END)
    .compile({ checkpointer });
}

const prefix = `t-${process.pid}-${Date.now()}-`;
let next = 0;

async function run(graph, n) {
  for (let i = 0; i < n; i++) {
    const out = await graph.invoke({ n: 0 }, { configurable: { thread_id: prefix + next++ }, durability });
    if (out.n !== 3) throw new Error(`Chain3 returned n=${out.n}, want 3`);
  }
}

const say = (v) => process.stdout.write(JSON.stringify(v) + "\n");
const commands = createInterface({ input: process.stdin });

if (mode === "serve") {
  const { saver, close } = await openSaver();
  const graph = chain3(saver);
  await run(graph, 1);
  say({ ready: true });
  for await (const line of commands) {
    const { runs } = JSON.parse(line);
    const start = process.hrtime.bigint();
    await run(graph, runs);
    say({ ns: Number(process.hrtime.bigint() - start), runs });
  }
  await close();
} else if (mode === "count") {
  say({ ready: true });
  for await (const line of commands) {
    const { runs } = JSON.parse(line);
    const { saver, close } = await openSaver();
    await run(chain3(saver), runs);
    await close();
    say({ runs });
  }
} else {
  throw new Error(`unknown mode ${JSON.stringify(mode)} (want serve or count)`);
}
