package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trellis-go/trellis/store/sqlite"
)

// ExampleOpenContext bounds the opening of a store, which creates or
// migrates its tables, by a deadline of the caller's.
func ExampleOpenContext() {
	dir, err := os.MkdirTemp("", "trellis-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s, err := sqlite.OpenContext(ctx, filepath.Join(dir, "memories.db"))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if _, err := s.Put(ctx, []string{"users", "ana"}, "diet", []byte(`{"text":"vegetarian"}`)); err != nil {
		panic(err)
	}
	item, err := s.Get(ctx, []string{"users", "ana"}, "diet")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(item.Value))
	// Output: {"text":"vegetarian"}
}
