package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/tool"
)

// streamingAgent serves a 1.0 card that says the agent streams, answers
// streams with stream and GetTask with a completed task.
func streamingAgent(t *testing.T, stream func(w http.ResponseWriter, r *http.Request, id json.RawMessage)) *httptest.Server {
	t.Helper()
	var hs *httptest.Server
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"Streamer","capabilities":{"streaming":true},"supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, hs.URL+"/")
			return
		}
		// Read the whole request: only then does the server watch for the
		// client leaving, which ends r's context.
		body, _ := io.ReadAll(r.Body)
		var req rpcReq
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("agent: %v", err)
			return
		}
		switch req.Method {
		case "SendStreamingMessage", "SubscribeToTask":
			stream(w, r, req.ID)
		case "GetTask":
			result(w, req.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"artifacts":[{"artifactId":"a","parts":[{"text":"polled answer"}]}]}`)
		default:
			result(w, req.ID, `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}`)
		}
	}))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs
}

const workingTask = `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`

// silentStream sends the task, then nothing until the client leaves.
func silentStream(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	sse(w, id, workingTask)
	<-r.Context().Done()
}

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

func TestClientStreamFromASilentAgentFailsAfterTheIdleTimeout(t *testing.T) {
	hs := streamingAgent(t, silentStream)
	c, err := a2a.NewClient(hs.URL, a2a.WithStreamIdleTimeout(300*time.Millisecond))
	require.NoError(t, err)
	var (
		events  int
		lastErr error
	)
	within(t, 10*time.Second, func() {
		for ev, err := range c.SendStreamingMessage(context.Background(), hello()) {
			if err != nil {
				lastErr = err
				continue
			}
			assert.NotNil(t, ev.Task)
			events++
		}
	})
	assert.Equal(t, 1, events, "the event before the silence is read")
	require.ErrorIs(t, lastErr, model.ErrStreamIdle)
	assert.Contains(t, lastErr.Error(), "300ms")
}

func TestClientStreamFromAnAgentThatNeverAnswersFailsAfterTheIdleTimeout(t *testing.T) {
	hs := streamingAgent(t, func(_ http.ResponseWriter, r *http.Request, _ json.RawMessage) { <-r.Context().Done() })
	c, err := a2a.NewClient(hs.URL, a2a.WithStreamIdleTimeout(50*time.Millisecond), a2a.WithRetries(0))
	require.NoError(t, err)
	within(t, 10*time.Second, func() {
		for _, err = range c.SubscribeToTask(context.Background(), "t1") {
		}
	})
	require.ErrorIs(t, err, model.ErrStreamIdle)
}

// A tool whose stream falls silent follows the task by polling, as after a
// dropped connection.
func TestToolFollowsASilentStreamByPolling(t *testing.T) {
	hs := streamingAgent(t, silentStream)
	tl, err := a2a.NewTool(context.Background(), hs.URL, a2a.WithStreamIdleTimeout(300*time.Millisecond),
		a2a.WithPollInterval(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	var r tool.Result
	within(t, 10*time.Second, func() { r, _ = invoke(t, context.Background(), tl, `{"task":"x"}`) })
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "polled answer")
}

// countingClient counts the bytes of reply bodies the client reads.
func countingClient(n *atomic.Int64) *http.Client {
	return &http.Client{Transport: roundTrip(func(req *http.Request) (*http.Response, error) {
		res, err := http.DefaultTransport.RoundTrip(req)
		if err == nil {
			res.Body = countingBody{res.Body, n}
		}
		return res, err
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func TestClientStreamWithAnEndlessEventFailsAtTheCap(t *testing.T) {
	hs := streamingAgent(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, `data: {"jsonrpc":"2.0","id":%s,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"`, id)
		chunk := []byte(strings.Repeat("y", 32<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	var read atomic.Int64
	c, err := a2a.NewClient(hs.URL, a2a.WithHTTPClient(countingClient(&read)), a2a.WithMaxResponseBytes(64<<10))
	require.NoError(t, err)
	within(t, 30*time.Second, func() {
		for _, err = range c.SendStreamingMessage(context.Background(), hello()) {
		}
	})
	require.ErrorIs(t, err, a2a.ErrResponseTooLarge)
	require.ErrorIs(t, err, model.ErrStreamEventTooLarge)
	assert.Contains(t, err.Error(), "65536 bytes")
	assert.Less(t, read.Load(), int64(1<<20), "the client stopped reading at the cap")
}

func TestClientStreamPastItsTotalCapFails(t *testing.T) {
	update := `{"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING"}}}`
	hs := streamingAgent(t, func(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
		results := []string{workingTask}
		for range 100 {
			results = append(results, update)
		}
		sse(w, id, results...)
	})
	c, err := a2a.NewClient(hs.URL, a2a.WithMaxStreamBytes(4<<10))
	require.NoError(t, err)
	events := 0
	for _, e := range c.SendStreamingMessage(context.Background(), hello()) {
		if e != nil {
			err = e
			break
		}
		events++
	}
	require.ErrorIs(t, err, model.ErrStreamTooLarge)
	require.ErrorIs(t, err, a2a.ErrResponseTooLarge)
	assert.ErrorContains(t, err, "4 KiB (4096 bytes)")
	assert.Less(t, events, 101)

	// The defaults read the whole stream.
	c, err = a2a.NewClient(hs.URL)
	require.NoError(t, err)
	events = 0
	for _, err := range c.SendStreamingMessage(context.Background(), hello()) {
		require.NoError(t, err)
		events++
	}
	assert.Equal(t, 101, events)
}

func TestNewClientRefusesBadStreamLimits(t *testing.T) {
	_, err := a2a.NewClient("http://127.0.0.1:1", a2a.WithStreamIdleTimeout(-time.Second), a2a.WithMaxStreamBytes(10))
	assert.ErrorContains(t, err, "WithStreamIdleTimeout")
	assert.ErrorContains(t, err, "WithMaxStreamBytes")
}
