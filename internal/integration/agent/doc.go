// Package agent holds the tests of Trellis's agent package that need more than
// agent itself and its test helpers: telemetry recorded with the OpenTelemetry
// SDK, checkpoints in SQLite and PostgreSQL, stores, providers. They live
// here, in the integration tests, so that a module requiring agent does not
// take these dependencies into its go.sum. It has no code of its own.
package agent
