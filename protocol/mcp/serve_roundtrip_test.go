package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// bookTool asks for a time and a name (elicitation), then asks the
// client's model for a greeting (sampling). runs counts its runs.
func bookTool(runs *int) tool.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"v":{"type":"string"}}}`)
	return tool.MustFunc("book", "books", func(ctx context.Context, _ struct{}) (string, error) {
		*runs++
		when, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "When?", Schema: schema})
		if err != nil {
			return "", err
		}
		who, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "Who?", Schema: schema})
		if err != nil {
			return "", err
		}
		s, err := tool.Sample(ctx, tool.SamplingRequest{Messages: []model.Message{model.User("greet " + who.Content["v"].(string))}})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%v for %v: %s", when.Content["v"], who.Content["v"], s.Message.Text()), nil
	})
}

func TestServedToolAsksInRoundTripsOnProtocol20260728(t *testing.T) {
	runs := 0
	srv, err := NewServer(t.Context(), tool.NewStatic("s", bookTool(&runs)))
	require.NoError(t, err)
	var asked []string
	ts := memToolset(t, srv,
		WithElicitation(func(_ context.Context, r tool.ElicitRequest) (tool.ElicitResult, error) {
			asked = append(asked, r.Message)
			return tool.ElicitResult{Action: "accept", Content: map[string]any{"v": map[string]string{"When?": "8pm", "Who?": "Ada"}[r.Message]}}, nil
		}),
		WithSampling(SampleWith(scripted.New(scripted.Reply("Hello Ada")), func(context.Context, tool.SamplingRequest) SamplingDecision { return SamplingAllow })))
	res, err := remote(t, ts, "book").Call(t.Context(), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "8pm for Ada: Hello Ada", res.Text())
	assert.Equal(t, []string{"When?", "Who?"}, asked, "each question is asked once")
	assert.Equal(t, 4, runs, "the tool runs once per round: three questions, then the answer")
}

func TestRoundTripsPauseAGraphRunOfTheClient(t *testing.T) {
	runs := 0
	srv, err := NewServer(t.Context(), tool.NewStatic("s", bookTool(&runs)))
	require.NoError(t, err)
	ts := memToolset(t, srv, WithSampling(SampleWith(scripted.New(scripted.Reply("Hi")), nil)))
	g := callGraph(t, remote(t, ts, "book"))
	ctx := t.Context()

	_, err = g.Invoke(ctx, callState{}, graph.WithThread("rt"))
	ie, ok := errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "When?", ie.Interrupts[0].Payload.(Elicitation).Message)

	_, err = g.Resume(ctx, "rt", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"v": "noon"}}))
	ie, ok = errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "Who?", ie.Interrupts[0].Payload.(Elicitation).Message)

	_, err = g.Resume(ctx, "rt", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"v": "Bo"}}))
	ie, ok = errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "greet Bo", ie.Interrupts[0].Payload.(SamplingApproval).Request.Messages[0].Text())

	out, err := g.Resume(ctx, "rt", graph.WithResumeValue(true))
	require.NoError(t, err)
	assert.Equal(t, "noon for Bo: Hi", out.Out)
}

func TestRoundTripStateIsBoundToTheServerAndTheCall(t *testing.T) {
	runs := 0
	srv, err := NewServer(t.Context(), tool.NewStatic("s", bookTool(&runs)), WithRoundTripKey([]byte("0123456789abcdef0123456789abcdef")))
	require.NoError(t, err)
	answers := map[string]json.RawMessage{"q0": json.RawMessage(`{"action":"accept","content":{"v":"9am"}}`)}
	st := srv.sealState(answers, "book", json.RawMessage(`{}`))

	got, err := srv.openState(st, "book", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, answers, got)

	_, err = srv.openState(st, "book", json.RawMessage(`{"x":1}`))
	assert.Error(t, err, "other arguments")
	_, err = srv.openState(st, "other", json.RawMessage(`{}`))
	assert.Error(t, err, "another tool")
	other, err := NewServer(t.Context(), tool.NewStatic("s", bookTool(&runs)))
	require.NoError(t, err)
	_, err = other.openState(st, "book", json.RawMessage(`{}`))
	assert.Error(t, err, "another server's key")
	_, err = srv.openState("e30."+st[len(st)-10:], "book", json.RawMessage(`{}`))
	assert.Error(t, err, "altered answers")

	// A client that sends a forged state gets an error, and the tool does
	// not run.
	ts := memToolset(t, srv)
	before := runs
	err = ts.do(t.Context(), "call book", func(ctx context.Context, s *session) error {
		_, err := s.cs.CallTool(ctx, &sdk.CallToolParams{Name: "book", Arguments: json.RawMessage(`{}`), RequestState: "e30.AAAA"})
		return err
	})
	assert.ErrorContains(t, err, "request state")
	assert.Equal(t, before, runs)
}

// FuzzRequestState: a request state from a client is accepted only when
// this server sealed it for the same tool and arguments, and reading one
// never panics.
func FuzzRequestState(f *testing.F) {
	srv, err := NewServer(context.Background(), tool.NewStatic("s"), WithRoundTripKey([]byte("0123456789abcdef0123456789abcdef")))
	if err != nil {
		f.Fatal(err)
	}
	sealed := srv.sealState(map[string]json.RawMessage{"q0": json.RawMessage(`{"action":"accept"}`)}, "book", json.RawMessage(`{}`))
	f.Add(sealed, "book", `{}`)
	f.Add("e30.AAAA", "book", `{}`)
	f.Add(".", "", "")
	f.Add(sealed+"x", "book", `{}`)
	f.Fuzz(func(t *testing.T, st, name, args string) {
		answers, err := srv.openState(st, name, json.RawMessage(args))
		if err != nil {
			return
		}
		if st != sealed || name != "book" || args != `{}` {
			t.Fatalf("accepted a state it did not seal: %q for %q %q", st, name, args)
		}
		if len(answers) != 1 {
			t.Fatalf("answers: %v", answers)
		}
	})
}
