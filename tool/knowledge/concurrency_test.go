package knowledge_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/knowledge"
)

// Writers add, replace and delete documents while readers search, list and
// save: run with -race.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	kb := newKB(t, knowledge.WithChunkSize(64))
	add(t, kb, drinks...)
	set, err := knowledge.Tools(kb, knowledge.WithAgentic())
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 30 {
				id := fmt.Sprintf("w%d-%d", w, i%5)
				text := fmt.Sprintf("# Doc %d\n\nShared words about tea and coffee, version %d.\n\nMore text in a second paragraph, long enough to be cut.", i, i)
				if err := kb.AddDocument(ctx, knowledge.Doc{ID: id, Source: id + ".md", Text: text, Metadata: map[string]string{"writer": fmt.Sprint(w)}}); err != nil {
					errs <- err
					return
				}
				if i%7 == 6 && i < 25 { // every ID is added again after its last delete
					_ = kb.Remove(ctx, id)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 30 {
				res, err := kb.Search(ctx, knowledge.Query{Text: "tea coffee version", Limit: 8, Filter: map[string]string{"writer": "1"}})
				if err != nil {
					errs <- err
					return
				}
				for _, r := range res {
					if r.Metadata["writer"] != "1" {
						errs <- fmt.Errorf("filter not applied: %v", r.Metadata)
					}
				}
				if _, err := kb.Retrieve(ctx, "tea", 3); err != nil {
					errs <- err
				}
				_ = kb.Documents()
				if err := kb.Save(io.Discard); err != nil {
					errs <- err
				}
				if _, err := set.Tools(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Len(t, kb.Documents(), len(drinks)+4*5)
}
