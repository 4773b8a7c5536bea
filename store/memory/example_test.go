package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-go/trellis/model/hashembed"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
)

// Items live under hierarchical namespaces; a search covers a namespace
// and everything below it, filtered on the items' JSON fields.
func ExampleNew() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()

	_, _ = s.Put(ctx, []string{"users", "ana", "prefs"}, "seat", []byte(`{"value":"window","weight":3}`))
	_, _ = s.Put(ctx, []string{"users", "ana", "prefs"}, "meal", []byte(`{"value":"vegetarian","weight":5}`))
	_, _ = s.Put(ctx, []string{"users", "bob", "prefs"}, "seat", []byte(`{"value":"aisle","weight":4}`))

	it, _ := s.Get(ctx, []string{"users", "ana", "prefs"}, "seat")
	fmt.Println(string(it.Value), it.Version)

	heavy, _ := s.Search(ctx, []string{"users"}, store.Query{Filter: []store.Cond{store.Gte("weight", 4)}})
	for _, it := range heavy {
		fmt.Println(it.Namespace[1], it.Key)
	}
	// Output:
	// {"value":"window","weight":3} 1
	// bob seat
	// ana meal
}

// With an embedder, a search can be by meaning: the nearest items first.
func ExampleNew_meaning() {
	ctx := context.Background()
	s := memory.New(store.WithEmbedder(hashembed.New(0)), store.WithIndex("text"))
	defer s.Close()
	ns := []string{"users", "ana", "memories"}
	_, _ = s.Apply(ctx, []store.Op{
		store.PutOp(ns, "1", []byte(`{"text":"Ana is allergic to peanuts"}`)),
		store.PutOp(ns, "2", []byte(`{"text":"Ana plays the cello on Sundays"}`)),
	})
	found, _ := s.Search(ctx, []string{"users", "ana"}, store.Query{Text: "does Ana have allergies", Limit: 1})
	fmt.Println(found[0].Key)
	// Output: 1
}

// PutIf writes only over the version read, so two writers never overwrite
// each other silently: the second one learns of the first.
func ExampleNew_putIf() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()
	ns := []string{"users", "ana"}
	_, _ = s.Put(ctx, ns, "profile", []byte(`{"name":"Ana"}`))

	read, _ := s.Get(ctx, ns, "profile")
	_, _ = s.PutIf(ctx, ns, "profile", []byte(`{"name":"Ana","city":"Porto"}`), read.Version)
	_, err := s.PutIf(ctx, ns, "profile", []byte(`{"name":"Ana B."}`), read.Version)
	var conflict *store.ConflictError
	fmt.Println(errors.Is(err, store.ErrConflict), errors.As(err, &conflict) && conflict.Have == 2)
	// Output: true true
}

// Items may expire; Sweep removes the expired ones (store.SweepEvery runs
// it on a timer).
func ExampleNew_ttl() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memory.New(store.WithClock(func() time.Time { return now }))
	defer s.Close()
	_, _ = s.Put(ctx, []string{"sessions"}, "s1", []byte(`{}`), store.WithTTL(time.Hour))

	now = now.Add(2 * time.Hour)
	_, err := s.Get(ctx, []string{"sessions"}, "s1")
	n, _ := s.Sweep(ctx)
	fmt.Println(errors.Is(err, store.ErrNotFound), n)
	// Output: true 1
}
