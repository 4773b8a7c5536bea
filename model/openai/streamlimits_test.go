package openai_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/internal/wiretest"
	"github.com/trellis-go/trellis/model/openai"
)

// A server that sends the headers and then nothing fails the stream after
// the idle timeout, whether it fell silent before the reply began or in
// the middle of it, and the failure is not retried.
func TestStreamFromASilentServerFailsAfterTheIdleTimeout(t *testing.T) {
	for name, first := range map[string]string{
		"before the reply": "data: " + streamText[0] + "\n\n",
		"mid-reply":        "data: " + streamText[0] + "\n\ndata: " + streamText[1] + "\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, wiretest.Silent(t, first))
			m, w := newModel(t, s, openai.WithStreamLimits(model.StreamLimits{IdleTimeout: 50 * time.Millisecond}))
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
	s := newServer(t, wiretest.Endless("data: "+streamText[0]+"\n\n"))
	var read atomic.Int64
	m, _ := newModel(t, s, openai.WithHTTPClient(wiretest.CountingClient(s.Client, &read)),
		openai.WithStreamLimits(model.StreamLimits{MaxEventBytes: cap}))
	var err error
	wiretest.Within(t, 30*time.Second, func() { _, err = model.Collect(m.Stream(context.Background(), userReq("x"))) })
	require.ErrorIs(t, err, model.ErrStreamEventTooLarge)
	assert.Contains(t, err.Error(), "1 MiB")
	assert.Less(t, read.Load(), int64(cap+256<<10), "the client stopped reading at the cap")
}

// A whole reply past its cap fails too.
func TestStreamPastItsTotalCapFails(t *testing.T) {
	s := newServer(t, sseReply(streamText))
	m, _ := newModel(t, s, openai.WithStreamLimits(model.StreamLimits{MaxBytes: 1024}))
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, model.ErrStreamTooLarge)
	assert.ErrorContains(t, err, "exceeds 1 KiB (1024 bytes), the limit on a whole reply")

	m, _ = newModel(t, s)
	_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err, "the defaults are far above a reply")
}

func TestWithStreamLimitsRefusesNegativeCaps(t *testing.T) {
	_, err := openai.New("m", openai.WithStreamLimits(model.StreamLimits{MaxBytes: -1}))
	assert.ErrorContains(t, err, "WithStreamLimits")
}
