// Package pgtest connects the module's tests to the PostgreSQL test server:
// 127.0.0.1:5432, database test, or the server TRELLIS_POSTGRES_URL names.
// Tests skip with a message that says how to provide one when it cannot be
// reached, and fail instead when CI=true, since CI must run against a real
// server.
package pgtest
