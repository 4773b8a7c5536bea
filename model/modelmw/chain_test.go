package modelmw_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

// tag is a middleware that records its name on the way in and appends it
// to the reply's text on the way out.
func tag(name string, log *[]string, mu *sync.Mutex) modelmw.Middleware {
	return modelmw.Intercept(func(ctx context.Context, req *model.Request, next model.Model) (*model.Response, error) {
		mu.Lock()
		*log = append(*log, name)
		mu.Unlock()
		resp, err := next.Generate(ctx, req)
		if err != nil {
			return nil, err
		}
		resp.Message.Content = []model.Part{model.TextPart(resp.Message.Text() + "+" + name)}
		return resp, nil
	})
}

func TestChainRunsTheFirstMiddlewareOutermost(t *testing.T) {
	var (
		log []string
		mu  sync.Mutex
	)
	m := modelmw.Chain(scripted.New(scripted.Reply("hi")), tag("a", &log, &mu), nil, tag("b", &log, &mu))
	resp, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, log)
	assert.Equal(t, "hi+b+a", resp.Message.Text())
}

func TestChainDescribesItsModel(t *testing.T) {
	base := &scripted.Model{Name: "small", StructuredOutput: true}
	m := modelmw.Chain(base, modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		return req, nil, nil
	}))
	assert.Equal(t, base.Info(), modelmw.Describe(m))
	assert.Equal(t, base.Info(), modelmw.Describe(modelmw.Chain(m)))
}

func TestChainPanicsNamingAMiddlewareThatReturnsNil(t *testing.T) {
	broken := func(model.Model) model.Model { return nil }
	assert.PanicsWithValue(t, "modelmw: middleware 2 of 2 returned a nil model", func() {
		modelmw.Chain(scripted.New(), nil, broken)
	})
}

func TestBeforeRewritesTheRequest(t *testing.T) {
	base := scripted.New(scripted.Reply("ok"), scripted.Reply("ok"))
	upper := modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		r := *req
		r.Messages = []model.Message{model.User(strings.ToUpper(req.Messages[0].Text()))}
		return &r, nil, nil
	})
	m := modelmw.Chain(base, upper)
	_, err := m.Generate(t.Context(), userReq("shout"))
	require.NoError(t, err)
	_, err = textOf(m.Stream(t.Context(), userReq("again")))
	require.NoError(t, err)
	reqs := base.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "SHOUT", reqs[0].Messages[0].Text())
	assert.Equal(t, "AGAIN", reqs[1].Messages[0].Text())
}

func TestBeforeEndsTheCallWithItsOwnReply(t *testing.T) {
	base := scripted.New()
	canned := modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		return nil, &model.Response{Message: model.Assistant("from the hook"), FinishReason: "stop"}, nil
	})
	m := modelmw.Chain(base, canned)
	resp, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "from the hook", resp.Message.Text())
	text, err := textOf(m.Stream(t.Context(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "from the hook", text)
	assert.Zero(t, base.Calls(), "the model is not called")
}

func TestBeforeFailsTheCall(t *testing.T) {
	refused := errors.New("refused")
	base := scripted.New()
	m := modelmw.Chain(base, modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		return nil, nil, refused
	}))
	_, err := m.Generate(t.Context(), userReq("x"))
	assert.ErrorIs(t, err, refused)
	_, err = textOf(m.Stream(t.Context(), userReq("x")))
	assert.ErrorIs(t, err, refused)
	assert.Zero(t, base.Calls())
}

func TestAfterRewritesTheReplyOfBothKindsOfCall(t *testing.T) {
	base := scripted.New(scripted.Reply("secret plan"), scripted.Reply("secret plan"))
	m := modelmw.Chain(base, modelmw.After(func(ctx context.Context, req *model.Request, resp *model.Response) (*model.Response, error) {
		out := *resp
		out.Message.Content = []model.Part{model.TextPart(strings.ReplaceAll(resp.Message.Text(), "secret", "[hidden]"))}
		return &out, nil
	}))
	resp, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "[hidden] plan", resp.Message.Text())
	text, err := textOf(m.Stream(t.Context(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "[hidden] plan", text)
}

func TestOnChunkFailsAStreamMidway(t *testing.T) {
	stop := errors.New("stop")
	base := scripted.New(scripted.Reply("one two three four"))
	m := modelmw.Chain(base, modelmw.OnChunk(func(ctx context.Context, req *model.Request, c model.Chunk) error {
		if strings.Contains(c.Text, "three") {
			return stop
		}
		return nil
	}))
	var got strings.Builder
	var gotErr error
	for c, err := range m.Stream(t.Context(), userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		got.WriteString(c.Text)
	}
	assert.ErrorIs(t, gotErr, stop)
	assert.Equal(t, "one two", got.String(), "the chunks before the failing one went through")
}

func TestOnChunkSeesAGeneratedReplyAsChunks(t *testing.T) {
	var seen strings.Builder
	base := scripted.New(scripted.Reply("whole reply"))
	m := modelmw.Chain(base, modelmw.OnChunk(func(ctx context.Context, req *model.Request, c model.Chunk) error {
		seen.WriteString(c.Text)
		return nil
	}))
	_, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "whole reply", seen.String())
}

// TestStreamsPassThroughUnbuffered proves that a chunk reaches the
// consumer before the model produced the next one, through middleware
// that does not need the whole reply.
func TestStreamsPassThroughUnbuffered(t *testing.T) {
	g := newGated(model.Chunk{Text: "a"}, model.Chunk{Text: "b"}, model.Chunk{FinishReason: "stop"})
	pass := modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		return req, nil, nil
	})
	watch := modelmw.OnChunk(func(context.Context, *model.Request, model.Chunk) error { return nil })
	m := modelmw.Chain(g, pass, watch, modelmw.Retry(model.Retry{}), modelmw.Log(slog.New(slog.DiscardHandler)))
	ctx, cancel := context.WithTimeout(modelmw.WithLedger(t.Context(), modelmw.NewLedger()), 10*time.Second)
	defer cancel()
	next, stop := iterPull(m.Stream(ctx, userReq("x")))
	defer stop()
	for i, want := range []string{"a", "b", ""} {
		g.next <- struct{}{}
		c, err, ok := next()
		require.True(t, ok)
		require.NoError(t, err)
		assert.Equal(t, want, c.Text)
		assert.Equal(t, i+1, g.produced(), "chunk %d arrived before the model produced another", i)
	}
}

// TestStandardMiddlewareStreamsUnbuffered proves, for each standard
// middleware that does not need the whole reply, that a chunk reaches the
// consumer before the model produced the one after the next: nothing is
// collected on the way (output guardrails hold back one chunk, the last
// one until the reply was judged whole).
func TestStandardMiddlewareStreamsUnbuffered(t *testing.T) {
	pass := modelmw.GuardrailFunc("pass", func(context.Context, string) (string, error) { return "", nil })
	streaming := pass
	streaming.Streaming = true
	for _, tc := range []struct {
		name string
		mw   modelmw.Middleware
		lag  int // chunks the middleware holds back
	}{
		{"Fallback", modelmw.Fallback([]model.Model{scripted.New()}), 0},
		{"RateLimit", modelmw.RateLimit(modelmw.RateLimits{RequestsPerMinute: 10, TokensPerMinute: 10_000}), 0},
		{"Budget", modelmw.Budget(modelmw.BudgetPolicy{MaxTokens: 10_000}), 0},
		{"Cache", modelmw.Cache(modelmw.NewMemoryCache(10, 0)), 0},
		{"Telemetry", modelmw.Telemetry(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider()), 0},
		{"Trim", modelmw.Trim(modelmw.TrimPolicy{MaxTokens: 1000}), 0},
		{"InputGuardrails", modelmw.InputGuardrails(pass), 0},
		{"OutputGuardrails", modelmw.OutputGuardrails(pass), 1},
		{"StreamingOutputGuardrails", modelmw.OutputGuardrails(streaming), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := []model.Chunk{{Text: "a"}, {Text: "b"}, {Text: "c"}, {FinishReason: "stop"}}
			g := &gated{chunks: chunks, next: make(chan struct{}, len(chunks))}
			m := modelmw.Chain(g, tc.mw)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			next, stop := iterPull(m.Stream(ctx, userReq("x")))
			defer stop()
			released := 0
			for i, want := range chunks {
				// Let the model produce the chunk wanted and the ones the
				// middleware holds back, no more.
				for ; released < min(i+1+tc.lag, len(chunks)); released++ {
					g.next <- struct{}{}
				}
				c, err, ok := next()
				require.True(t, ok)
				require.NoError(t, err)
				assert.Equal(t, want, c)
				assert.LessOrEqual(t, g.produced(), min(i+1+tc.lag, len(chunks)), "chunk %d arrived before the model produced more", i)
			}
		})
	}
}
