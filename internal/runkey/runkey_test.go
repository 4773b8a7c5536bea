package runkey

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type run string

func (r run) Thread() string { return string(r) }

func TestThreadReadsTheRunBehindTheContext(t *testing.T) {
	if got := Thread(context.Background()); got != "" {
		t.Errorf("no run: got %q, want \"\"", got)
	}
	ctx := context.WithValue(context.Background(), Key{}, run("t-1"))
	if got := Thread(ctx); got != "t-1" {
		t.Errorf("got %q, want t-1", got)
	}
	ctx = context.WithValue(context.Background(), Key{}, "not a run")
	if got := Thread(ctx); got != "" {
		t.Errorf("a value that is no Run: got %q, want \"\"", got)
	}
}
