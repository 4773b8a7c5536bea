package runstest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/state"
)

// Chat is the state of the suite's graphs.
type Chat struct {
	Messages []string `json:"messages"`
	Turns    int      `json:"turns"`
	Note     string   `json:"note,omitempty"`
}

// gates lets the suite hold a node of a run until it says so: a node
// named "hold" blocks on its thread's gate while one is set.
type gates struct {
	mu    sync.Mutex
	holds map[string]*hold
	runs  map[string]int // how many times each thread's nodes ran, by "thread/node"
}

type hold struct {
	entered chan struct{} // closed when the node reached the gate
	release chan struct{}
	once    sync.Once
	times   int // how many executions it holds; later ones pass
}

func newGates() *gates {
	return &gates{holds: map[string]*hold{}, runs: map[string]int{}}
}

// hold makes the next n executions of thread's "hold" node wait for
// release.
func (g *gates) hold(thread string, n int) *hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := &hold{entered: make(chan struct{}), release: make(chan struct{}), times: n}
	g.holds[thread] = h
	return h
}

func (h *hold) open() { close(h.release) }

func (g *gates) count(thread, node string) {
	g.mu.Lock()
	g.runs[thread+"/"+node]++
	g.mu.Unlock()
}

// ran says how many times node ran on thread.
func (g *gates) ran(thread, node string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[thread+"/"+node]
}

func (g *gates) wait(ctx context.Context, thread string) error {
	g.mu.Lock()
	h := g.holds[thread]
	pass := h == nil || h.times == 0
	if !pass {
		h.times--
	}
	g.mu.Unlock()
	if pass {
		return nil
	}
	h.once.Do(func() { close(h.entered) })
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func appendNode(gs *gates, name string) graph.NodeFunc[Chat] {
	return func(ctx context.Context, s Chat) (Chat, error) {
		gs.count(graph.ThreadID(ctx), name)
		last := ""
		if len(s.Messages) > 0 {
			last = s.Messages[len(s.Messages)-1]
		}
		s.Messages = append(s.Messages, name+":"+last)
		return s, nil
	}
}

// graphs compiles the suite's graphs with m's checkpointer and registers
// them:
//   - "echo": a → b, each appending "<node>:<last message>";
//   - "ask": asks for a note (graph.Interrupt), then appends "note:<it>";
//   - "hold": a → hold → b, where hold waits on its thread's gate;
//   - "fail": one node that fails.
func graphs(t testing.TB, m *runs.Manager, gs *gates) {
	t.Helper()
	reducers := []graph.Option{
		graph.WithReducer(func(s *Chat) *[]string { return &s.Messages }, state.Append[string]()),
		graph.WithReducer(func(s *Chat) *int { return &s.Turns }, state.Sum[int]()),
	}
	compile := func(b *graph.Builder[Chat]) runs.Runnable {
		g, err := b.Compile(graph.WithCheckpointer(m.Saver()))
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		return runs.Graph(g)
	}
	echo := compile(graph.New[Chat](append(reducers, graph.WithName("echo"))...).
		AddNode("a", appendNode(gs, "a")).AddNode("b", appendNode(gs, "b")).
		AddEdge(graph.START, "a").AddEdge("a", "b"))
	ask := compile(graph.New[Chat](append(reducers, graph.WithName("ask"))...).
		AddNode("ask", func(ctx context.Context, s Chat) (Chat, error) {
			gs.count(graph.ThreadID(ctx), "ask")
			note, err := graph.Interrupt[string](ctx, map[string]string{"question": "a note?"})
			if err != nil {
				return s, err
			}
			s.Messages = append(s.Messages, "note:"+note)
			return s, nil
		}).AddEdge(graph.START, "ask"))
	held := compile(graph.New[Chat](append(reducers, graph.WithName("hold"))...).
		AddNode("a", appendNode(gs, "a")).
		AddNode("hold", func(ctx context.Context, s Chat) (Chat, error) {
			if err := gs.wait(ctx, graph.ThreadID(ctx)); err != nil {
				return s, err
			}
			return appendNode(gs, "hold")(ctx, s)
		}).
		AddNode("b", appendNode(gs, "b")).
		AddEdge(graph.START, "a").AddEdge("a", "hold").AddEdge("hold", "b"))
	failing := compile(graph.New[Chat](append(reducers, graph.WithName("fail"))...).
		AddNode("fail", func(context.Context, Chat) (Chat, error) { return Chat{}, errors.New("the node failed") }).
		AddEdge(graph.START, "fail"))
	reporter, err := agent.NewReAct(reportModel{}, agent.WithName("reporter"),
		agent.WithTools(tool.MustFunc("report", "Starts a long report.", func(context.Context, struct{}) (tool.Result, error) {
			return tool.PendingResult("report started"), nil
		}, tool.WithLongRunning())),
		agent.WithCheckpointer(m.Saver()))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if err := m.Register(echo, ask, held, failing, runs.Graph(reporter)); err != nil {
		t.Fatalf("register: %v", err)
	}
}

// reportModel plays the "reporter" agent: asked anything, it calls the
// report tool (call ID "call-report"); otherwise it says what the report
// tool answered last. Each reply reports reportUsage.
type reportModel struct{}

func (reportModel) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == model.RoleUser {
		return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "call-report", Name: "report", Arguments: []byte("{}")}),
			Model: reportModelName, Usage: reportUsage}, nil
	}
	text := ""
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			text = m.Text()
		}
	}
	return &model.Response{Message: model.Assistant("report: " + text), Model: reportModelName, Usage: reportUsage}, nil
}

// reportModel's name and the usage of each of its replies.
const reportModelName = "report-1"

var reportUsage = model.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}

func (r reportModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	resp, err := r.Generate(ctx, req)
	if err != nil {
		return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, err) }
	}
	return model.ResponseChunks(resp)
}

// stateOf reads a thread's state through a graph compiled on m's
// checkpointer.
func stateOf(t testing.TB, m *runs.Manager, thread string) Chat {
	t.Helper()
	g, err := graph.New[Chat]().AddNode("n", func(_ context.Context, s Chat) (Chat, error) { return s, nil }).
		AddEdge(graph.START, "n").Compile(graph.WithCheckpointer(m.Saver()))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	snap, err := g.GetState(t.Context(), thread)
	if err != nil {
		t.Fatalf("state of thread %s: %v", thread, err)
	}
	return snap.State
}

func input(messages ...string) []byte {
	b := []byte(`{"messages":[`)
	for i, m := range messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%q", m)
	}
	return append(b, "]}"...)
}
