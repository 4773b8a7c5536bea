package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/cputime"
	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
)

func TestSSEReader(t *testing.T) {
	stream := ": keep-alive\r\n\r\n" +
		"event: message\r\nid: 1\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
		"retry: 100\n\n" + // no data: no event
		"data:no-space\n\n" +
		"data\n\n" + // a data field without a value: an empty line of data
		"data: last without blank line" // cut off by the end: discarded
	r := newSSEReader(strings.NewReader(stream), 1024)
	var got []string
	for {
		data, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, string(data))
	}
	assert.Equal(t, []string{"{\"a\":\n1}", "no-space", ""}, got)

	r = newSSEReader(strings.NewReader("data: "+strings.Repeat("x", 2000)+"\n\n"), 1024)
	_, err := r.next()
	assert.ErrorIs(t, err, ErrResponseTooLarge)
	r = newSSEReader(strings.NewReader(strings.Repeat("data: xxxxxxxx\n", 200)+"\n"), 1024)
	_, err = r.next()
	assert.ErrorIs(t, err, ErrResponseTooLarge, "many lines of one event add up")
}

func TestWriteSSE(t *testing.T) {
	var b strings.Builder
	require.NoError(t, sse.Write(&b, sse.Event{Data: []byte("{\"a\":\n1}")}))
	assert.Equal(t, "data: {\"a\":\ndata: 1}\n\n", b.String())
	r := newSSEReader(strings.NewReader(b.String()), 1024)
	data, err := r.next()
	require.NoError(t, err)
	assert.Equal(t, "{\"a\":\n1}", string(data))
}

func TestPartJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Part
		out      string // the 1.0 form
	}{
		{"text 1.0", `{"text":"hi","metadata":{"k":1}}`, Part{Kind: PartText, Text: "hi", Metadata: map[string]any{"k": float64(1)}}, `{"text":"hi","metadata":{"k":1}}`},
		{"empty text", `{"text":""}`, Part{Kind: PartText}, `{"text":""}`},
		{"text 0.3", `{"kind":"text","text":"hi"}`, Part{Kind: PartText, Text: "hi"}, `{"text":"hi"}`},
		{"data 1.0", `{"data":[1,2],"mediaType":"application/json"}`, Part{Kind: PartData, Data: json.RawMessage(`[1,2]`), MediaType: "application/json"}, `{"data":[1,2],"mediaType":"application/json"}`},
		{"data 0.3", `{"kind":"data","data":{"x":true}}`, Part{Kind: PartData, Data: json.RawMessage(`{"x":true}`)}, `{"data":{"x":true}}`},
		{"url 1.0", `{"url":"https://e.com/a.pdf","filename":"a.pdf","mediaType":"application/pdf"}`, Part{Kind: PartURL, URL: "https://e.com/a.pdf", Filename: "a.pdf", MediaType: "application/pdf"}, `{"url":"https://e.com/a.pdf","filename":"a.pdf","mediaType":"application/pdf"}`},
		{"file uri 0.3", `{"kind":"file","file":{"uri":"https://e.com/a.pdf","name":"a.pdf","mimeType":"application/pdf"}}`, Part{Kind: PartURL, URL: "https://e.com/a.pdf", Filename: "a.pdf", MediaType: "application/pdf"}, `{"url":"https://e.com/a.pdf","filename":"a.pdf","mediaType":"application/pdf"}`},
		{"raw 1.0", `{"raw":"aGVsbG8=","mediaType":"image/png"}`, Part{Kind: PartRaw, Raw: []byte("hello"), MediaType: "image/png"}, `{"raw":"aGVsbG8=","mediaType":"image/png"}`},
		{"file bytes 0.3", `{"kind":"file","file":{"bytes":"aGVsbG8","mimeType":"image/png"}}`, Part{Kind: PartRaw, Raw: []byte("hello"), MediaType: "image/png"}, `{"raw":"aGVsbG8=","mediaType":"image/png"}`},
		{"unknown", `{"hologram":{}}`, Part{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Part
			require.NoError(t, json.Unmarshal([]byte(tc.in), &p))
			assert.Equal(t, tc.want, p)
			out, err := json.Marshal(p)
			if tc.out == "" {
				assert.Error(t, err, "a part without content cannot be written")
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tc.out, string(out))
		})
	}
}

func TestLegacyShapes(t *testing.T) {
	ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	task := &Task{
		ID: "t", ContextID: "c",
		Status: TaskStatus{State: StateInputRequired, Timestamp: ts, Message: &Message{MessageID: "m", Role: RoleAgent, Parts: []Part{TextPart("?")}}},
		Artifacts: []Artifact{{ArtifactID: "a", Parts: []Part{
			DataPart(json.RawMessage(`{"x":1}`)), DataPart(json.RawMessage(`[1]`)), FilePart("https://e.com/f", "text/plain", "f"), RawPart([]byte("hi"), "image/png", ""),
		}}},
	}
	out, err := json.Marshal(legacyEvent(Event{Task: task}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"task","id":"t","contextId":"c",
		"status":{"state":"input-required","timestamp":"2026-03-01T10:00:00.000Z","message":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"?"}]}},
		"artifacts":[{"artifactId":"a","parts":[
			{"kind":"data","data":{"x":1}},
			{"kind":"text","text":"[1]"},
			{"kind":"file","file":{"uri":"https://e.com/f","mimeType":"text/plain","name":"f"}},
			{"kind":"file","file":{"bytes":"aGk=","mimeType":"image/png"}}]}]}`, string(out))

	// And it reads back.
	var ev Event
	require.NoError(t, json.Unmarshal(out, &ev))
	require.NotNil(t, ev.Task)
	assert.Equal(t, StateInputRequired, ev.Task.Status.State)
	assert.Equal(t, RoleAgent, ev.Task.Status.Message.Role)
	assert.Equal(t, ts, ev.Task.Status.Timestamp)

	out, err = json.Marshal(legacyEvent(Event{StatusUpdate: &StatusUpdate{TaskID: "t", ContextID: "c", Status: TaskStatus{State: StateWorking}}}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}`, string(out))
}

func TestTaskStates(t *testing.T) {
	for name, want := range map[string]TaskState{
		`"completed"`: StateCompleted, `"TASK_STATE_COMPLETED"`: StateCompleted, `"cancelled"`: StateCanceled,
		`"input-required"`: StateInputRequired, `"unknown"`: StateUnspecified, `""`: StateUnspecified,
		`"TASK_STATE_NEW"`: "TASK_STATE_NEW",
	} {
		var s TaskState
		require.NoError(t, json.Unmarshal([]byte(name), &s))
		assert.Equal(t, want, s, name)
	}
	assert.True(t, StateRejected.Terminal())
	assert.True(t, StateAuthRequired.Interrupted())
	assert.True(t, StateSubmitted.Active())
	s := TaskState("TASK_STATE_NEW")
	assert.False(t, s.Active() || s.Terminal() || s.Interrupted())
}

func TestProtocolGeneration(t *testing.T) {
	for v, want := range map[string]string{
		"1.0": "1", "1": "1", "1.2.3": "1", "v1.0": "1", "0.3": "0.3", "0.3.0": "0.3",
		"0.2.6": "", "2.0": "", "": "", "one": "",
	} {
		assert.Equal(t, want, protocolGeneration(v), v)
	}
}

func TestCardEndpointPrefersNewest(t *testing.T) {
	base, _ := url.Parse("https://agent.example.com/.well-known/agent-card.json")
	card := Card{Name: "x", SupportedInterfaces: []Interface{
		{URL: "/v03", ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		{URL: "https://agent.example.com/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
		{URL: "/v1", ProtocolBinding: "jsonrpc", ProtocolVersion: "1.1"},
	}}
	ep, err := card.endpoint(base)
	require.NoError(t, err)
	assert.Equal(t, endpoint{url: "https://agent.example.com/v1"}, ep, "1.x wins, relative URLs resolve")
	card.SupportedInterfaces = card.SupportedInterfaces[:2]
	ep, err = card.endpoint(base)
	require.NoError(t, err)
	assert.Equal(t, endpoint{url: "https://agent.example.com/v03", legacy: true}, ep)
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"Currency Agent": "currency_agent", "  Weather-Bot 3000!! ": "weather-bot_3000", "日本語": "remote_agent",
		strings.Repeat("a", 80): strings.Repeat("a", 64), "a__b": "a_b",
	} {
		assert.Equal(t, want, toolName(in), in)
	}
}

func TestQuestionText(t *testing.T) {
	ins := []graph.PendingInterrupt{
		{Payload: nodes.Question{Question: "Which city?", Choices: []string{"Paris", "Rome"}}},
		{Payload: json.RawMessage(`{"question":"How many nights?","call_id":"c1"}`)},
		{Payload: "Approve the refund?"},
		{Payload: map[string]any{"amount": 5}},
	}
	assert.Equal(t, "Which city?\nChoices: Paris, Rome\n\nHow many nights?\n\nApprove the refund?\n\n{\"amount\":5}", questionText(ins))
	assert.Equal(t, "The agent needs more input to go on.", questionText(nil))
}

func TestAnswerOpenCalls(t *testing.T) {
	msgs := []model.Message{
		model.User("hi"),
		model.Assistant("", model.ToolCall{ID: "c1", Name: "a"}, model.ToolCall{ID: "c2", Name: "b"}),
		model.ToolMessage("c1", "a", false, model.TextPart("ok")),
	}
	out := answerOpenCalls(msgs)
	require.Len(t, out, 4)
	assert.Equal(t, "c2", out[3].ToolCallID)
	assert.True(t, out[3].IsError)
	assert.Len(t, answerOpenCalls(out), 4, "nothing left to answer")
}

// A stream whose lines end with a lone CR (which server-sent events allow)
// lost every event after the first of a read, and waited for a line feed
// that never came before it returned any.
func TestSSEReaderCarriageReturns(t *testing.T) {
	r := newSSEReader(strings.NewReader("data: one\r\rdata: two\rdata: 2\r\r: c\rdata: three\r\n\r\ndata: four"), 1024)
	var got []string
	for {
		data, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, string(data))
	}
	assert.Equal(t, []string{"one", "two\n2", "three"}, got, "four, cut off by the end, is discarded")

	// An event ended by CRs is delivered without waiting for more bytes.
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() { _, _ = pw.Write([]byte("data: live\r\r")) }()
	r = newSSEReader(pr, 1024)
	done := make(chan []byte, 1)
	go func() { data, _ := r.next(); done <- data }()
	select {
	case data := <-done:
		assert.Equal(t, "live", string(data))
	case <-time.After(5 * time.Second):
		t.Fatal("the event was not delivered")
	}
	pw.Close()

	// An event of exactly the limit is read.
	r = newSSEReader(strings.NewReader("data: "+strings.Repeat("x", 1024)+"\n\n"), 1024)
	data, err := r.next()
	require.NoError(t, err)
	assert.Len(t, data, 1024)
}

// TestSubscriberOverflowEndsTheStream checks that a client that stops
// reading holds at most maxQueued events: past that, its queue is dropped
// and its stream ends, while a reader that keeps up gets every event.
func TestSubscriberOverflowEndsTheStream(t *testing.T) {
	ev := Event{StatusUpdate: &StatusUpdate{TaskID: "t1"}}

	slow := newSubscriber()
	for range maxQueued {
		slow.push(ev, false)
	}
	evs, last := slow.take()
	if len(evs) != maxQueued || last {
		t.Fatalf("a full queue: got %d events, last=%v; want %d, false", len(evs), last, maxQueued)
	}
	for range maxQueued + 1 {
		slow.push(ev, false)
	}
	slow.push(ev, true)
	evs, last = slow.take()
	if len(evs) != 0 || !last {
		t.Fatalf("an overflowed queue: got %d events, last=%v; want 0, true", len(evs), last)
	}
}

// A new task past WithMaxTasks forgets the oldest of its owner's tasks that
// do not run, and past WithMaxTotalTasks the oldest of all owners' that do
// not run; with none to forget it is refused. It cancels the tasks of its
// context that wait for input. Checked against a plain scan of the tasks in
// the order they were made, over random tasks that start, end (some asking
// for input), are continued and are canceled.
func TestNewTasksForgetTheOldestIdleTasksWithinEachLimit(t *testing.T) {
	const maxTasks, maxTotal = 5, 12
	s := &Server{cfg: serverConfig{maxTasks: maxTasks, maxTotalTasks: maxTotal}, tasks: map[string]*taskRec{}}
	type ref struct {
		t       *taskRec
		running bool
		state   TaskState
	}
	var order []*ref // every task remembered, oldest first
	evict := func(owner string, everyone bool, n int) bool {
		count := func() int {
			c := 0
			for _, r := range order {
				if everyone || r.t.owner == owner {
					c++
				}
			}
			return c
		}
		for count() > n {
			i := slices.IndexFunc(order, func(r *ref) bool { return !r.running && (everyone || r.t.owner == owner) })
			if i < 0 {
				return false
			}
			order = slices.Delete(order, i, i+1)
		}
		return true
	}
	pick := func(rng *rand.Rand, running bool) *ref {
		var rs []*ref
		for _, r := range order {
			if r.running == running {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			return nil
		}
		return rs[rng.IntN(len(rs))]
	}
	rng := rand.New(rand.NewPCG(3, 4))
	owners := []string{"a", "b", "c", "d"}
	refused, superseded := 0, 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for step := range 20_000 {
		switch op := rng.IntN(20); {
		case op < 10:
			owner, ctxID := owners[rng.IntN(len(owners))], fmt.Sprint("ctx-", rng.IntN(3))
			ok := evict(owner, false, maxTasks-1) && evict("", true, maxTotal-1)
			tk, f := s.admit(owner, ctxID)
			require.Equal(t, ok, f == nil, "step %d: task of %s admitted", step, owner)
			if !ok {
				refused++
				break
			}
			for _, r := range order {
				if r.t.owner == owner && r.t.contextID == ctxID && !r.running && r.state.Interrupted() {
					r.state = StateCanceled
					superseded++
				}
			}
			order = append(order, &ref{t: tk, running: true, state: StateSubmitted})
			tk.status.State = StateSubmitted
		case op < 16:
			if r := pick(rng, true); r != nil {
				r.state = []TaskState{StateCompleted, StateInputRequired}[rng.IntN(2)]
				s.setStatus(r.t, r.state, nil, true)
				s.markIdle(r.t)
				r.running = false
			}
		case op < 18:
			if r := pick(rng, false); r != nil && !r.state.Terminal() {
				s.markRunning(r.t)
				r.running, r.state = true, StateSubmitted
				r.t.status.State = StateSubmitted
			}
		default:
			if r := pick(rng, false); r != nil && r.state.Interrupted() {
				s.setStatus(r.t, StateCanceled, nil, true)
				r.state = StateCanceled
			}
		}
		want, owned := map[string]TaskState{}, map[string]int{}
		for _, r := range order {
			want[r.t.id] = r.state
			owned[r.t.owner]++
		}
		got := map[string]TaskState{}
		for id, tk := range s.tasks {
			got[id] = tk.status.State
		}
		require.Equal(t, want, got, "step %d", step)
		require.True(t, maps.Equal(owned, s.owned), "step %d: owned %v, want %v", step, s.owned, owned)
	}
	assert.NotZero(t, refused, "the limits were reached with every task running")
	assert.NotZero(t, superseded, "new tasks canceled tasks that waited")
}

// BenchmarkNewTaskAt10kTasks measures what a new task costs the server's
// bookkeeping (making room, recording it, and later its run's end) when
// it remembers 10,000 tasks, at the limits: each new task forgets one.
// With owners=100 each owner is at its WithMaxTasks of 100 and the new
// task's owner is drawn at random; with running=1000 the 1,000 oldest
// tasks still run, so the oldest that can go comes after them.
func BenchmarkNewTaskAt10kTasks(b *testing.B) {
	const total = 10_000
	for _, bc := range []struct {
		owners, running int
	}{{1, 0}, {100, 0}, {1, 1000}} {
		b.Run(fmt.Sprintf("owners=%d/running=%d", bc.owners, bc.running), func(b *testing.B) {
			s := &Server{cfg: serverConfig{maxTasks: total / bc.owners, maxTotalTasks: total}, tasks: map[string]*taskRec{}}
			owners := make([]string, bc.owners)
			for i := range owners {
				owners[i] = fmt.Sprintf("owner-%d", i)
			}
			for i := range total {
				t, f := s.admit(owners[i%bc.owners], "ctx")
				if f != nil {
					b.Fatal(f.msg)
				}
				if i >= bc.running {
					benchEnd(s, t)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			b.ResetTimer()
			start, measured := cputime.Self()
			for b.Loop() {
				t, f := s.admit(owners[rng.IntN(bc.owners)], "ctx")
				if f != nil {
					b.Fatal(f.msg)
				}
				benchEnd(s, t)
			}
			if end, ok := cputime.Self(); ok && measured {
				b.ReportMetric(float64(end-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			}
			if len(s.tasks) != total {
				b.Fatalf("%d tasks remembered, want %d", len(s.tasks), total)
			}
		})
	}
}

// benchEnd ends t's run as Server.end does, as far as the bookkeeping of
// tasks goes.
func benchEnd(s *Server, t *taskRec) {
	t.status.State = StateCompleted
	s.markIdle(t)
}
