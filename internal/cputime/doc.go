// Package cputime reads the CPU time the process has used, which
// benchmarks report per operation beside wall time: on a shared machine
// the load moves it far less than it moves elapsed time.
package cputime
