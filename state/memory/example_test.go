package memory_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

func Example() {
	ctx := context.Background()
	s := memory.New()

	for i, id := range []string{"cp-1", "cp-2", "cp-3"} {
		err := s.Put(ctx, state.Checkpoint{ThreadID: "order-42", ID: id, Step: i, Source: "loop", Payload: []byte("...")})
		if err != nil {
			panic(err)
		}
	}
	if err := s.PutWrites(ctx, "order-42", "", "cp-3", []state.PendingWrite{{TaskID: "task-1", Node: "agent"}}); err != nil {
		panic(err)
	}

	latest, err := s.Get(ctx, "order-42", "", "")
	if err != nil {
		panic(err)
	}
	fmt.Println("latest:", latest.Checkpoint.ID, "writes:", len(latest.Writes))

	history, err := s.List(ctx, "order-42", "", state.ListOptions{Limit: 2})
	if err != nil {
		panic(err)
	}
	for _, cp := range history {
		fmt.Println("history:", cp.ID)
	}

	_, err = s.Get(ctx, "order-7", "", "")
	fmt.Println(errors.Is(err, state.ErrNotFound), err)
	// Output:
	// latest: cp-3 writes: 1
	// history: cp-3
	// history: cp-2
	// true thread "order-7": checkpoint not found
}

func ExampleSaver_Prune() {
	ctx := context.Background()
	s := memory.New()
	for _, id := range []string{"a", "b", "c", "d"} {
		if err := s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: id}); err != nil {
			panic(err)
		}
	}
	if err := s.Prune(ctx, "t", 2); err != nil {
		panic(err)
	}
	history, err := s.List(ctx, "t", "", state.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, cp := range history {
		fmt.Println(cp.ID)
	}
	// Output:
	// d
	// c
}

// PutIfLatest stores a checkpoint only while the thread's latest is the one
// the writer last saw: a second writer that read the thread at the same
// time is refused.
func ExampleSaver_PutIfLatest() {
	ctx := context.Background()
	s := memory.New()
	first := state.Checkpoint{ThreadID: "t", ID: "cp-1", Source: "input"}
	if err := s.PutIfLatest(ctx, first, ""); err != nil { // the thread was empty
		panic(err)
	}

	// Two writers both read cp-1 as the latest; the first to write wins.
	mine := state.Checkpoint{ThreadID: "t", ID: "cp-2a", ParentID: "cp-1", Source: "loop"}
	theirs := state.Checkpoint{ThreadID: "t", ID: "cp-2b", ParentID: "cp-1", Source: "loop"}
	fmt.Println(s.PutIfLatest(ctx, mine, "cp-1"))
	err := s.PutIfLatest(ctx, theirs, "cp-1")
	fmt.Println(errors.Is(err, state.ErrNotLatest))
	fmt.Println(err)
	// Output:
	// <nil>
	// true
	// thread "t": checkpoint "cp-2b": the thread's latest checkpoint is not the expected one: the latest is "cp-2a", not "cp-1"
}

// A write guard admits or refuses each write: here, a writer whose lease
// was taken over stores nothing.
func ExampleWithWriteGuard() {
	ctx := context.Background()
	holder := "worker-1" // who may write; another worker takes it over below
	type writerKey struct{}
	s := memory.New(memory.WithWriteGuard(func(ctx context.Context) error {
		if ctx.Value(writerKey{}) != holder {
			return errors.New("lease lost")
		}
		return nil
	}))

	w1 := context.WithValue(ctx, writerKey{}, "worker-1")
	fmt.Println(s.Put(w1, state.Checkpoint{ThreadID: "t", ID: "cp-1"}))
	holder = "worker-2"
	err := s.Put(w1, state.Checkpoint{ThreadID: "t", ID: "cp-2"})
	fmt.Println(errors.Is(err, state.ErrFenced))
	latest, _ := s.Get(ctx, "t", "", "")
	fmt.Println("latest:", latest.Checkpoint.ID)
	// Output:
	// <nil>
	// true
	// latest: cp-1
}
