// Package nodes holds the tests of Trellis's nodes package that need more than
// nodes itself and its test helpers: telemetry recorded with the OpenTelemetry
// SDK, checkpoints in SQLite and PostgreSQL, stores, providers. They live
// here, in the integration tests, so that a module requiring nodes does not
// take these dependencies into its go.sum. It has no code of its own.
package nodes
