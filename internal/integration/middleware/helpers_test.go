package middleware_test

import "github.com/trellis-go/trellis/internal/testutil/mwtest"

// The helpers these tests share with middleware's own, from
// internal/testutil/mwtest, by the names the tests use.
type counted = mwtest.Counted

var (
	newFakeClock = mwtest.NewFakeClock
	newCounted   = mwtest.NewCounted
	ok           = mwtest.OK
	failWith     = mwtest.FailWith
	failTimes    = mwtest.FailTimes
	errFlaky     = mwtest.ErrFlaky
	req          = mwtest.Req
	handler      = mwtest.Handler
	readOnly     = mwtest.ReadOnly()
)
