package agui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/agui"
)

// within runs fn and fails the test when it takes longer than d.
func within(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still waiting after %v", d)
	}
}

// limitServer serves runs with handle and returns a client of it.
func limitServer(t *testing.T, handle http.HandlerFunc, opts ...agui.ClientOption) *agui.Client {
	t.Helper()
	srv := httptest.NewServer(handle)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	c, err := agui.NewClient(srv.URL, append([]agui.ClientOption{agui.WithHTTPClient(srv.Client())}, opts...)...)
	require.NoError(t, err)
	return c
}

func TestClientStreamFromASilentServerFailsAfterTheIdleTimeout(t *testing.T) {
	c := limitServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+started+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}, agui.WithIdleTimeout(300*time.Millisecond))
	var (
		evs []agui.Event
		err error
	)
	within(t, 10*time.Second, func() { evs, err = collect(c) })
	assert.Equal(t, []string{"RUN_STARTED"}, evTypes(evs))
	require.ErrorIs(t, err, model.ErrStreamIdle)
	assert.Contains(t, err.Error(), "300ms")
}

func TestClientRunOnAServerThatNeverAnswersFailsAfterTheIdleTimeout(t *testing.T) {
	c := limitServer(t, func(_ http.ResponseWriter, r *http.Request) {
		// Read the request: only then does the server watch for the
		// client leaving, which ends r's context.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}, agui.WithIdleTimeout(50*time.Millisecond))
	var err error
	within(t, 10*time.Second, func() { _, err = collect(c) })
	require.ErrorIs(t, err, model.ErrStreamIdle)
}

// countingTransport counts the bytes of reply bodies read through it.
type countingTransport struct{ n *atomic.Int64 }

func (ct countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		res.Body = countingBody{res.Body, ct.n}
	}
	return res, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestClientEndlessEventFailsAtItsCap(t *testing.T) {
	var read atomic.Int64
	c := limitServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+started+"\n\ndata: {\"type\":\"CUSTOM\",\"value\":\"")
		chunk := []byte(strings.Repeat("z", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}, agui.WithHTTPClient(&http.Client{Transport: countingTransport{&read}}), agui.WithMaxEventBytes(64<<10))
	var (
		evs []agui.Event
		err error
	)
	within(t, 30*time.Second, func() { evs, err = collect(c) })
	assert.Equal(t, []string{"RUN_STARTED"}, evTypes(evs))
	require.ErrorIs(t, err, model.ErrStreamEventTooLarge)
	assert.Contains(t, err.Error(), "larger than 65536 bytes")
	assert.Less(t, read.Load(), int64(1<<20), "the client stopped reading at the cap")
}

func TestClientStreamPastItsTotalCapFails(t *testing.T) {
	events := func(int, *agui.RunInput) []string {
		out := []string{"data: " + started + "\n\n"}
		for range 100 {
			out = append(out, `data: {"type":"CUSTOM","name":"tick","value":1}`+"\n\n")
		}
		return append(out, "data: "+finished+"\n\n")
	}
	evs, err := collect(rawServer(t, events, agui.WithMaxStreamBytes(2048)))
	require.ErrorIs(t, err, model.ErrStreamTooLarge)
	assert.Contains(t, err.Error(), "2 KiB")
	assert.Less(t, len(evs), 100)

	evs, err = collect(rawServer(t, events))
	require.NoError(t, err, "the defaults read a whole run")
	assert.Len(t, evs, 102)
}

func TestNewClientRefusesBadStreamLimits(t *testing.T) {
	_, err := agui.NewClient("http://127.0.0.1:1", agui.WithIdleTimeout(-time.Second), agui.WithMaxStreamBytes(0))
	assert.ErrorContains(t, err, "WithIdleTimeout")
	assert.ErrorContains(t, err, "WithMaxStreamBytes")
}
