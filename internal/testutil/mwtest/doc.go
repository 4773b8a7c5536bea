// Package mwtest holds what the tests of the middleware package and its
// integration tests (internal/integration/middleware) share: a fake clock,
// tools that count their runs, tool bodies that answer, fail or block, and
// a handler that chains middleware over the terminal one. Only tests
// import it. It sits on the middleware layer (docs/architecture.md).
package mwtest
