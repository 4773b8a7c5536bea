// Package integration holds the tests that run Trellis's packages together
// against real stores and under load: crash recovery on SQLite and
// Postgres, parallel interrupts, replays, streaming, middleware stacks and
// supervisors. It has no code of its own.
package integration
