package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// ExampleOpenContext bounds the opening, which may wait for a file other
// processes hold busy, by a deadline of the caller's.
func ExampleOpenContext() {
	dir, err := os.MkdirTemp("", "trellis-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s, err := sqlite.OpenContext(ctx, filepath.Join(dir, "checkpoints.db"))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	_, err = s.Get(ctx, "nobody", "", "")
	fmt.Println(errors.Is(err, state.ErrNotFound))
	// Output: true
}
