// Package bench compares Trellis with other Go agent frameworks on identical
// workloads. It is a module of its own so that the frameworks it measures
// never enter Trellis's dependency graph.
//
// Run everything with
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 6 | tee new.txt
//
// and compare runs with benchstat. Sub-benchmarks are named
// <workload>/<framework>, for example BenchmarkChain3/trellis and
// BenchmarkChain3/eino.
package bench
