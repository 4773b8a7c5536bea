package anthropic_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/internal/wiretest"
)

func wire(events ...event) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("event: " + e.name + "\ndata: " + strings.TrimSpace(e.data) + "\n\n")
	}
	return b.String()
}

// A server that sends the headers and then nothing fails the stream after
// the idle timeout, whether it fell silent before the reply began or in
// the middle of it, and the failure is not retried.
func TestStreamFromASilentServerFailsAfterTheIdleTimeout(t *testing.T) {
	for name, first := range map[string]string{
		"before the reply": wire(streamText[0]),
		"mid-reply":        wire(streamText[:3]...),
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, wiretest.Silent(t, first))
			m, w := newModel(t, s, anthropic.WithStreamLimits(model.StreamLimits{IdleTimeout: 50 * time.Millisecond}))
			var err error
			wiretest.Within(t, 10*time.Second, func() {
				for _, e := range m.Stream(context.Background(), userReq("x")) {
					err = e
				}
			})
			require.ErrorIs(t, err, model.ErrStreamIdle)
			assert.Contains(t, err.Error(), "50ms")
			assert.Contains(t, err.Error(), "WithStreamLimits")
			assert.Len(t, s.Received(), 1, "not retried")
			assert.Empty(t, w.All())
		})
	}
}

// An event that never ends fails the stream at its cap, and the client
// reads little past it.
func TestStreamWithAnEndlessEventFailsAtTheCap(t *testing.T) {
	const cap = 1 << 20
	s := newServer(t, wiretest.Endless(wire(streamText[0])+"event: content_block_delta\n"))
	var read atomic.Int64
	m, _ := newModel(t, s, anthropic.WithHTTPClient(wiretest.CountingClient(s.Client, &read)),
		anthropic.WithStreamLimits(model.StreamLimits{MaxEventBytes: cap}))
	var err error
	wiretest.Within(t, 30*time.Second, func() { _, err = model.Collect(m.Stream(context.Background(), userReq("x"))) })
	require.ErrorIs(t, err, model.ErrStreamEventTooLarge)
	assert.Contains(t, err.Error(), "1 MiB")
	assert.Less(t, read.Load(), int64(cap+256<<10), "the client stopped reading at the cap")
}

// A whole reply past its cap fails too; the defaults pass a reply.
func TestStreamPastItsTotalCapFails(t *testing.T) {
	s := newServer(t, sseReply(streamText))
	m, _ := newModel(t, s, anthropic.WithStreamLimits(model.StreamLimits{MaxBytes: 512}))
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, model.ErrStreamTooLarge)
	assert.ErrorContains(t, err, "exceeds 512 bytes, the limit on a whole reply")

	m, _ = newModel(t, s)
	_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
}

func TestWithStreamLimitsRefusesNegativeCaps(t *testing.T) {
	_, err := anthropic.New("m", anthropic.WithStreamLimits(model.StreamLimits{MaxEventBytes: -1}))
	assert.ErrorContains(t, err, "WithStreamLimits")
}
