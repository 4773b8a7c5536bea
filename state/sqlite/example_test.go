package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "trellis-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// A path is all it takes; the tables are created on first use.
	s, err := sqlite.Open(filepath.Join(dir, "checkpoints.db"))
	if err != nil {
		panic(err)
	}
	for i, id := range []string{"cp-1", "cp-2"} {
		if err := s.Put(ctx, state.Checkpoint{ThreadID: "ticket-9", ID: id, Step: i, Source: "loop"}); err != nil {
			panic(err)
		}
	}
	if err := s.Close(); err != nil {
		panic(err)
	}

	// Another process (here: another open) resumes the thread.
	s, err = sqlite.Open(filepath.Join(dir, "checkpoints.db"))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	latest, err := s.Get(ctx, "ticket-9", "", "")
	if err != nil {
		panic(err)
	}
	fmt.Println("resume from", latest.Checkpoint.ID, "at step", latest.Checkpoint.Step)

	err = s.Put(ctx, state.Checkpoint{ThreadID: "ticket-9", ID: "cp-2"})
	fmt.Println(errors.Is(err, state.ErrConflict), err)
	// Output:
	// resume from cp-2 at step 1
	// true thread "ticket-9": checkpoint "cp-2": checkpoint already exists
}

func ExampleWithSynchronous() {
	dir, err := os.MkdirTemp("", "trellis-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// Sync the log at every commit, so a power cut loses nothing either.
	s, err := sqlite.Open(filepath.Join(dir, "checkpoints.db"), sqlite.WithSynchronous(sqlite.SynchronousFull))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	fmt.Println(sqlite.SynchronousFull)
	// Output:
	// FULL
}
