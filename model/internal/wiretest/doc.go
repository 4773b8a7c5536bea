// Package wiretest holds what the providers' wire tests share: an httptest
// server that records the requests it receives and answers from fixtures,
// a recorder of retry waits that never sleeps, and JSON replies.
package wiretest
