package modelmw_test

import (
	"context"
	"iter"
	"sync"

	"github.com/trellis-go/trellis/model"
)

// gated streams its chunks one at a time: each is sent only after the
// test lets it go (a send on next), so a test can see a chunk reach the
// consumer while the model has not produced the next one (nothing
// buffered on the way). A middleware that buffered would wait for a
// chunk the test does not let go, until the context ends.
type gated struct {
	chunks []model.Chunk
	next   chan struct{}
	mu     sync.Mutex
	sent   int
}

func newGated(chunks ...model.Chunk) *gated {
	return &gated{chunks: chunks, next: make(chan struct{}, 1)}
}

func (g *gated) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return model.Collect(g.Stream(ctx, req))
}

func (g *gated) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range g.chunks {
			select {
			case <-g.next:
			case <-ctx.Done():
				yield(model.Chunk{}, ctx.Err())
				return
			}
			g.mu.Lock()
			g.sent++
			g.mu.Unlock()
			if !yield(c, nil) {
				return
			}
		}
	}
}

func (g *gated) produced() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent
}

// userReq is a request of one user message.
func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.User(text)}}
}

// textOf collects a stream's text, and its error.
func textOf(seq iter.Seq2[model.Chunk, error]) (string, error) {
	resp, err := model.Collect(seq)
	if err != nil {
		return "", err
	}
	return resp.Message.Text(), nil
}
