// Package system builds the multi-agent system of examples/supervisor: a
// supervisor that delegates to a researcher and a writer, each an agent with
// tools of its own, every tool call going through one parallel executor with
// cache, retry, circuit-breaker and timeout middleware.
//
// The command runs it on the models the environment selects; Scripted gives
// the offline models, which play their parts by reading the conversation
// they are given, so that other programs (tests that run the system under
// another runtime, such as module temporal's) build the same system without
// copying it.
package system
