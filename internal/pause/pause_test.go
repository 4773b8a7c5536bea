package pause

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSleep(t *testing.T) {
	start := time.Now()
	if err := Sleep(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatalf("a full wait: %v", err)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Error("returned before the wait was over")
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Errorf("no wait on a live context: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("no wait on a done context: got %v, want context.Canceled", err)
	}
	start = time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("a long wait on a done context: got %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Minute {
		t.Error("waited on a done context")
	}

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait past the deadline: got %v, want context.DeadlineExceeded", err)
	}
}
