package gemini_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
	"github.com/trellis-go/trellis/model/internal/wiretest"
)

// A server that sends the headers and then nothing fails the stream after
// the idle timeout, whether it fell silent before the reply began or in
// the middle of it, and the failure is not retried.
func TestStreamFromASilentServerFailsAfterTheIdleTimeout(t *testing.T) {
	for name, first := range map[string]string{
		"before the reply": "",
		"mid-reply":        "data: " + streamThinkingText[0] + "\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, wiretest.Silent(t, first))
			m, w := newModel(t, s, gemini.WithStreamLimits(model.StreamLimits{IdleTimeout: 50 * time.Millisecond}))
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
	s := newServer(t, wiretest.Endless("data: "+streamThinkingText[0]+"\r\n\r\n"))
	var read atomic.Int64
	m, _ := newModel(t, s, gemini.WithHTTPClient(wiretest.CountingClient(s.Client, &read)),
		gemini.WithStreamLimits(model.StreamLimits{MaxEventBytes: cap}))
	var err error
	wiretest.Within(t, 30*time.Second, func() { _, err = model.Collect(m.Stream(context.Background(), userReq("x"))) })
	require.ErrorIs(t, err, model.ErrStreamEventTooLarge)
	assert.Contains(t, err.Error(), "1 MiB")
	assert.Less(t, read.Load(), int64(cap+256<<10), "the client stopped reading at the cap")
}

// A whole reply past its cap fails too, streamed or not.
func TestRepliesPastTheirTotalCapFail(t *testing.T) {
	s := newServer(t, sseReply(streamThinkingText))
	m, _ := newModel(t, s, gemini.WithStreamLimits(model.StreamLimits{MaxBytes: 512}))
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, model.ErrStreamTooLarge)

	s = newServer(t, jsonReply(200, replyCalls))
	m, _ = newModel(t, s, gemini.WithStreamLimits(model.StreamLimits{MaxBytes: 512}))
	_, err = m.Generate(context.Background(), userReq("x"))
	require.ErrorIs(t, err, model.ErrStreamTooLarge)

	m, _ = newModel(t, s)
	_, err = m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err, "the defaults are far above a reply")
}
