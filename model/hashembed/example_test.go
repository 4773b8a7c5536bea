package hashembed_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/model/hashembed"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
)

// A store that searches by meaning offline, with no model to call.
func Example() {
	ctx := context.Background()
	s := memory.New(store.WithEmbedder(hashembed.New(0)), store.WithIndex("text"))
	defer s.Close()
	ns := []string{"users", "ana", "memories"}
	_, _ = s.Put(ctx, ns, "1", []byte(`{"text":"Ana drinks green tea every morning"}`))
	_, _ = s.Put(ctx, ns, "2", []byte(`{"text":"Ana's cat is called Miso"}`))
	items, _ := s.Search(ctx, []string{"users", "ana"}, store.Query{Text: "what does Ana drink", Limit: 1})
	fmt.Println(items[0].Key)
	// Output: 1
}
