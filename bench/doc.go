// Package bench compares Trellis with other agent frameworks on identical
// workloads, and measures the runs layer across processes. It is a module
// of its own so that the frameworks it measures never enter Trellis's
// dependency graph.
//
// Run everything with
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 6 | tee new.txt
//
// and compare runs with benchstat. Sub-benchmarks are named
// <workload>/<framework>, for example BenchmarkChain3/trellis and
// BenchmarkChain3/eino, or <workload>/<store>/<framework>, as in
// BenchmarkChain3Checkpoint/postgres/langgraphjs.
//
// The LangGraph.js peers run in Node, started and driven by the benchmarks
// in the same run (node/chain3.mjs); their npm packages are pinned in
// node/package.json and node/package-lock.json: run `npm ci` in bench/node
// first, or those sub-benchmarks skip (CI installs them, and fails without
// them). The PostgreSQL benchmarks use the test server (127.0.0.1:5432,
// database test, or TRELLIS_POSTGRES_URL), each in a schema of its own;
// commits are counted in a database of their own, trellis_bench_commits,
// created on first use. BenchmarkCommitFloor needs pgbench.
//
// BenchmarkServerVersusLangGraphJS serves the same graphs (three nodes in a
// row, and a ReAct agent on a scripted model) from Trellis's LangGraph
// Server API (package server), on the memory, SQLite and PostgreSQL runs
// backends, and from the LangGraph.js reference server
// (@langchain/langgraph-api, in memory, node/server.mjs), and drives them
// all with the official SDK client in the same run.
//
// The runs layer's benchmarks (BenchmarkRuns*) start this test binary again
// as worker processes; see docs/performance.md for what each reports.
package bench
