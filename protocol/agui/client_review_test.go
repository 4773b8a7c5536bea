package agui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/tool"
)

// rawServer serves each request with the SSE chunks write returns, each
// written and flushed on its own, and returns a client of it.
func rawServer(t *testing.T, write func(n int, in *agui.RunInput) []string, opts ...agui.ClientOption) *agui.Client {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var in agui.RunInput
		if err := json.Unmarshal(b, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range write(int(n.Add(1)), &in) {
			_, _ = io.WriteString(w, chunk)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(srv.Client().CloseIdleConnections)
	c, err := agui.NewClient(srv.URL, append([]agui.ClientOption{agui.WithHTTPClient(srv.Client())}, opts...)...)
	require.NoError(t, err)
	return c
}

func collect(c *agui.Client) (evs []agui.Event, last error) {
	for ev, err := range c.Run(context.Background(), &agui.RunInput{ThreadID: "t", RunID: "r"}) {
		if err != nil {
			last = err
			continue
		}
		evs = append(evs, ev)
	}
	return evs, last
}

func evTypes(evs []agui.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, string(ev.Type))
	}
	return out
}

const (
	started  = `{"type":"RUN_STARTED","threadId":"t","runId":"r"}`
	finished = `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`
)

// SSE framing: events split across writes, CRLF, bare CR, multi-line
// data, comments and fields other than data all decode.
func TestClientSSEFraming(t *testing.T) {
	for name, chunks := range map[string][]string{
		"split":                        {"da", "ta: " + started[:10], started[10:] + "\n", "\n: ping\n\ndata: " + finished + "\n\n"},
		"crlf":                         {"data: " + started + "\r\n\r\n: ping\r\n\r\ndata: " + finished + "\r\n\r\n"},
		"cr":                           {"data: " + started + "\r\r: ping\r\rdata: " + finished + "\r", "\r"},
		"crlf split between CR and LF": {"data: " + started + "\r", "\n\r", "\ndata: " + finished + "\r\n\r\n"},
		"multi-line":                   {"event: x\nid: 1\nretry: 5\ndata: {\"type\":\ndata: \"RUN_STARTED\"}\n\ndata:" + finished + "\n\n"},
	} {
		t.Run(name, func(t *testing.T) {
			c := rawServer(t, func(int, *agui.RunInput) []string { return chunks })
			evs, err := collect(c)
			require.NoError(t, err)
			assert.Equal(t, []string{"RUN_STARTED", "RUN_FINISHED"}, evTypes(evs))
		})
	}
}

// STATE_DELTA's delta is a JSON Patch (an array), ACTIVITY_DELTA's patch
// too: a client must decode them, not fail the run.
func TestClientStateDelta(t *testing.T) {
	c := rawServer(t, func(int, *agui.RunInput) []string {
		return []string{"data: " + started + "\n\n",
			`data: {"type":"STATE_DELTA","delta":[{"op":"add","path":"/a","value":1}]}` + "\n\n",
			`data: {"type":"ACTIVITY_DELTA","messageId":"m","activityType":"plan","patch":[]}` + "\n\n",
			"data: " + finished + "\n\n"}
	})
	evs, err := collect(c)
	require.NoError(t, err)
	require.Equal(t, []string{"RUN_STARTED", "STATE_DELTA", "ACTIVITY_DELTA", "RUN_FINISHED"}, evTypes(evs))
	assert.JSONEq(t, `[{"op":"add","path":"/a","value":1}]`, string(evs[1].Patch))
	assert.JSONEq(t, `[]`, string(evs[2].Patch))
	assert.Empty(t, evs[1].Delta)

	// A text delta that is not a string is still malformed.
	c = rawServer(t, func(int, *agui.RunInput) []string {
		return []string{"data: " + started + "\n\n", `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":[1]}` + "\n\n", "data: " + finished + "\n\n"}
	})
	_, err = collect(c)
	assert.ErrorContains(t, err, "malformed")
}

// An event the stream cuts before its blank line is incomplete (SSE
// discards it): a run whose RUN_FINISHED is cut is truncated, not
// finished.
func TestClientFinalEventWithoutBlankLine(t *testing.T) {
	c := rawServer(t, func(int, *agui.RunInput) []string {
		return []string{"data: " + started + "\n\n", "data: " + finished}
	})
	evs, err := collect(c)
	assert.Equal(t, []string{"RUN_STARTED"}, evTypes(evs))
	assert.ErrorIs(t, err, agui.ErrTruncated)
}

// The event cap: an event of exactly the cap passes, a larger one, in one
// line or in several, fails the stream.
func TestClientEventCap(t *testing.T) {
	pad := func(n int) string { // an event of n bytes
		s := `{"type":"CUSTOM","name":"x","value":""}`
		return s[:len(s)-2] + strings.Repeat("a", n-len(s)) + `"}`
	}
	for name, tc := range map[string]struct {
		event string
		ok    bool
	}{
		"at cap":      {"data: " + pad(1000) + "\n\n", true},
		"over cap":    {"data: " + pad(1001) + "\n\n", false},
		"huge":        {"data: " + pad(200_000) + "\n\n", false},
		"multi-line":  {"data: " + pad(600)[:300] + "\ndata: " + pad(600)[300:] + "\ndata: " + strings.Repeat(" ", 500) + "\n\n", false},
		"huge no end": {"data: " + strings.Repeat("a", 300_000), false},
	} {
		t.Run(name, func(t *testing.T) {
			c := rawServer(t, func(int, *agui.RunInput) []string {
				return []string{"data: " + started + "\n\n", tc.event, "data: " + finished + "\n\n"}
			}, agui.WithMaxEventBytes(1000))
			evs, err := collect(c)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, []string{"RUN_STARTED", "CUSTOM", "RUN_FINISHED"}, evTypes(evs))
				return
			}
			assert.ErrorContains(t, err, "larger than 1000 bytes")
			assert.Equal(t, []string{"RUN_STARTED"}, evTypes(evs))
		})
	}
}

// hanging serves a run that never ends, and reports when the server sees
// the client gone.
func hanging(t *testing.T) (*agui.Client, <-chan struct{}) {
	t.Helper()
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+started+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(srv.Client().CloseIdleConnections)
	c, err := agui.NewClient(srv.URL, agui.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	return c, gone
}

// Leaving Run's loop early closes the connection; cancelling ctx ends a
// stream that never ends.
func TestClientRunStops(t *testing.T) {
	t.Run("break", func(t *testing.T) {
		c, gone := hanging(t)
		for ev, err := range c.Run(context.Background(), &agui.RunInput{}) {
			require.NoError(t, err)
			require.Equal(t, agui.EventRunStarted, ev.Type)
			break
		}
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatal("the connection stayed open after the loop ended")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		c, gone := hanging(t)
		ctx, cancel := context.WithCancel(context.Background())
		var last error
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev, err := range c.Run(ctx, &agui.RunInput{}) {
				if ev.Type == "RUN_STARTED" {
					cancel()
				}
				last = err
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not stop when its context was cancelled")
		}
		assert.ErrorIs(t, last, context.Canceled)
		<-gone
	})
}

func sse(evs ...string) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = "data: " + e + "\n\n"
	}
	return out
}

func ev(typ string, kv ...any) string {
	m := map[string]any{"type": typ}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func runStarted(in *agui.RunInput) string {
	return ev("RUN_STARTED", "threadId", in.ThreadID, "runId", in.RunID)
}

func runFinished(in *agui.RunInput, kv ...any) string {
	return ev("RUN_FINISHED", append([]any{"threadId", in.ThreadID, "runId", in.RunID}, kv...)...)
}

func remoteTool(t *testing.T, c *agui.Client) tool.Tool {
	t.Helper()
	tl, err := c.Tool("remote", "A remote agent.")
	require.NoError(t, err)
	return tl
}

func roles(msgs []agui.Message) []string {
	var out []string
	for _, m := range msgs {
		var s string
		_ = json.Unmarshal(m.Content, &s)
		out = append(out, m.ID+":"+m.Role+":"+s)
	}
	return out
}

// A server without MESSAGES_SNAPSHOT that reopens a text message: the
// answer is the whole text, and the next request carries the message
// once.
func TestRemoteToolReopenedText(t *testing.T) {
	var inputs []*agui.RunInput
	c := rawServer(t, func(n int, in *agui.RunInput) []string {
		inputs = append(inputs, in)
		id := fmt.Sprintf("a%d", n)
		return sse(runStarted(in),
			ev("TEXT_MESSAGE_START", "messageId", id, "role", "assistant"),
			ev("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", "Hello "),
			ev("TEXT_MESSAGE_END", "messageId", id),
			ev("TEXT_MESSAGE_START", "messageId", id, "role", "assistant"),
			ev("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", "world."),
			ev("TEXT_MESSAGE_END", "messageId", id),
			runFinished(in))
	})
	tl := remoteTool(t, c)
	res := call(t, tl, `{"task":"greet"}`)
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "Hello world.", res.Details.(agui.Reply).Answer)
	res = call(t, tl, `{"task":"again","thread_id":"`+threadOf(t, res)+`"}`)
	require.False(t, res.IsError, res.Text())
	require.Len(t, inputs, 2)
	got := roles(inputs[1].Messages)
	require.Len(t, got, 3)
	assert.Equal(t, "a1:assistant:Hello world.", got[1])
	assert.Equal(t, inputs[0].Messages[0].ID, inputs[1].Messages[0].ID)
}

// A server that streams its reply as TEXT_MESSAGE_CHUNK events (the
// consumer closes the message) and sends no snapshot.
func TestRemoteToolTextChunks(t *testing.T) {
	var inputs []*agui.RunInput
	c := rawServer(t, func(n int, in *agui.RunInput) []string {
		inputs = append(inputs, in)
		return sse(runStarted(in),
			ev("TEXT_MESSAGE_CHUNK", "messageId", fmt.Sprintf("c%d", n), "delta", "Paris"),
			ev("TEXT_MESSAGE_CHUNK", "delta", "."),
			runFinished(in))
	})
	tl := remoteTool(t, c)
	res := call(t, tl, `{"task":"Capital of France?"}`)
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "Paris.", res.Details.(agui.Reply).Answer)
	res = call(t, tl, `{"task":"Sure?","thread_id":"`+threadOf(t, res)+`"}`)
	require.False(t, res.IsError, res.Text())
	got := roles(inputs[1].Messages)
	require.Len(t, got, 3)
	assert.Equal(t, "c1:assistant:Paris.", got[1])
}

// A run that says nothing does not answer with what an earlier run of the
// thread said.
func TestRemoteToolNoStaleAnswer(t *testing.T) {
	c := rawServer(t, func(n int, in *agui.RunInput) []string {
		if n == 1 {
			return sse(runStarted(in),
				ev("TEXT_MESSAGE_START", "messageId", "a1", "role", "assistant"),
				ev("TEXT_MESSAGE_CONTENT", "messageId", "a1", "delta", "Let me ask."),
				ev("TEXT_MESSAGE_END", "messageId", "a1"),
				runFinished(in, "outcome", map[string]any{"type": "interrupt", "interrupts": []any{map[string]any{"id": "i1", "reason": "input_required", "message": "Which city?"}}}))
		}
		return sse(runStarted(in), runFinished(in))
	})
	tl := remoteTool(t, c)
	res := call(t, tl, `{"task":"Book"}`)
	require.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "The agent asks: Which city?"), res.Text())
	res = call(t, tl, `{"task":"Lyon","thread_id":"`+threadOf(t, res)+`"}`)
	assert.True(t, res.IsError, res.Text())
	assert.Contains(t, res.Text(), "without an answer")
}

// Concurrent calls on one thread go one after the other: neither loses
// the other's exchange, and an interrupt is answered once.
func TestRemoteToolConcurrentThread(t *testing.T) {
	var (
		mu      sync.Mutex
		inputs  []*agui.RunInput
		arrived = make(chan struct{})
	)
	c := rawServer(t, func(n int, in *agui.RunInput) []string {
		mu.Lock()
		inputs = append(inputs, in)
		mu.Unlock()
		if n == 1 {
			return sse(runStarted(in), runFinished(in, "outcome", map[string]any{"type": "interrupt", "interrupts": []any{map[string]any{"id": "i1", "reason": "input_required", "message": "Which city?"}}}))
		}
		// The first of the concurrent requests gives the second the time
		// to arrive.
		switch n {
		case 2:
			select {
			case <-arrived:
			case <-time.After(300 * time.Millisecond):
			}
		case 3:
			close(arrived)
		}
		id := fmt.Sprintf("a%d", n)
		var task string
		if len(in.Resume) == 0 {
			_ = json.Unmarshal(in.Messages[len(in.Messages)-1].Content, &task)
		} else {
			_ = json.Unmarshal(in.Resume[0].Payload, &task)
		}
		snap := append(in.Messages, agui.Message{ID: id, Role: "assistant", Content: json.RawMessage(fmt.Sprintf("%q", "re: "+task))})
		return sse(runStarted(in),
			ev("TEXT_MESSAGE_START", "messageId", id),
			ev("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", "re: "+task),
			ev("TEXT_MESSAGE_END", "messageId", id),
			ev("MESSAGES_SNAPSHOT", "messages", snap),
			runFinished(in))
	})
	tl := remoteTool(t, c)
	res := call(t, tl, `{"task":"Book"}`)
	thread := threadOf(t, res)
	var wg sync.WaitGroup
	for _, task := range []string{"Lyon", "Nice"} {
		wg.Go(func() {
			res := call(t, tl, `{"task":"`+task+`","thread_id":"`+thread+`"}`)
			assert.False(t, res.IsError, res.Text())
		})
	}
	wg.Wait()
	res = call(t, tl, `{"task":"Done?","thread_id":"`+thread+`"}`)
	require.False(t, res.IsError, res.Text())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, inputs, 4)
	resumes := 0
	for _, in := range inputs[1:3] {
		resumes += len(in.Resume)
	}
	assert.Equal(t, 1, resumes, "the interrupt is answered once")
	var said []string
	for _, m := range roles(inputs[3].Messages) {
		said = append(said, m[strings.Index(m, ":")+1:])
	}
	assert.Len(t, said, 5, "%v", said) // Book, re: first, second task, re: second, Done?
	assert.Contains(t, said, "assistant:re: Nice")
	assert.Contains(t, said, "assistant:re: Lyon")
}

// WithMaxThreads bounds the conversations kept: the least recently used
// is forgotten.
func TestRemoteToolMaxThreads(t *testing.T) {
	var inputs []*agui.RunInput
	c := rawServer(t, func(n int, in *agui.RunInput) []string {
		inputs = append(inputs, in)
		id := fmt.Sprintf("a%d", n)
		return sse(runStarted(in),
			ev("TEXT_MESSAGE_START", "messageId", id),
			ev("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", "ok"),
			ev("TEXT_MESSAGE_END", "messageId", id),
			runFinished(in))
	}, agui.WithMaxThreads(2))
	tl := remoteTool(t, c)
	t1 := threadOf(t, call(t, tl, `{"task":"one"}`))
	t2 := threadOf(t, call(t, tl, `{"task":"two"}`))
	call(t, tl, `{"task":"one more","thread_id":"`+t1+`"}`) // t1 most recent
	call(t, tl, `{"task":"three"}`)                         // forgets t2
	call(t, tl, `{"task":"again","thread_id":"`+t1+`"}`)
	call(t, tl, `{"task":"again","thread_id":"`+t2+`"}`)
	require.Len(t, inputs, 6)
	assert.Len(t, inputs[4].Messages, 5)
	assert.Len(t, inputs[5].Messages, 1)
}
