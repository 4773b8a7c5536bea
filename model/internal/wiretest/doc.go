// Package wiretest holds what the providers' wire tests share: an httptest
// server that records the requests it receives and answers from fixtures,
// a recorder of retry waits that never sleeps, JSON replies, and servers
// that hang or send without end, for the stream limits.
package wiretest
