package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// thinkingServer speaks the Messages API: its first reply thinks and calls
// the weather tool, the next ones answer. It answers a streaming request
// with server-sent events, any other with JSON, and records the bodies.
type thinkingServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]json.RawMessage
}

func newThinkingServer(t *testing.T) *thinkingServer {
	s := &thinkingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]json.RawMessage
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		first := len(s.bodies) == 1
		s.mu.Unlock()
		streaming := string(body["stream"]) == "true"
		const start = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`
		switch {
		case first && streaming:
			sse(w, start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Oslo needs "}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a lookup."}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-Oslo"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`,
				`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}`,
				`{"type":"content_block_stop","index":1}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}`,
				`{"type":"message_stop"}`)
		case first:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
				"content":[{"type":"thinking","thinking":"Oslo needs a lookup.","signature":"sig-Oslo"},
					{"type":"tool_use","id":"toolu_1","name":"weather","input":{"city":"Oslo"}}],
				"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":30}}`)
		case streaming:
			sse(w, start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Sunny in Oslo."}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`,
				`{"type":"message_stop"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5",
				"content":[{"type":"text","text":"Sunny in Oslo."}],
				"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":60,"output_tokens":5}}`)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		var head struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(e), &head)
		_, _ = io.WriteString(w, "event: "+head.Type+"\ndata: "+e+"\n\n")
	}
}

// requests returns the recorded request bodies.
func (s *thinkingServer) requests() []map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]json.RawMessage(nil), s.bodies...)
}

// A ReAct agent on Claude with extended thinking: the thinking that led to a
// tool call is kept in the conversation, survives the checkpoint, and goes
// back to the API with its signature, first in the assistant turn, as the
// API requires; the final answer's text does not include it.
func TestReActSendsClaudesThinkingBack(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		name := map[bool]string{false: "generate", true: "stream"}[streamed]
		t.Run(name, func(t *testing.T) {
			srv := newThinkingServer(t)
			m, err := anthropic.New("claude-sonnet-4-5",
				anthropic.WithBaseURL(srv.URL), anthropic.WithAPIKey("sk-test"), anthropic.WithHTTPClient(srv.Client()),
				anthropic.WithThinking(2048), anthropic.WithMaxTokens(8192), anthropic.WithMaxRetries(0))
			require.NoError(t, err)
			weather := tool.MustFunc("weather", "weather of a city", func(_ context.Context, in cityIn) (string, error) {
				return "sunny in " + in.City, nil
			})
			saver := memory.New()
			g, err := agent.NewReAct(m, agent.WithTools(weather), agent.WithCheckpointer(saver))
			require.NoError(t, err)
			ctx := context.Background()

			var out agent.State
			var reasoning strings.Builder
			if streamed {
				for ev, err := range g.Stream(ctx, agent.Ask("Weather in Oslo?"), graph.WithThread("t"), graph.WithModes(graph.ModeMessages)) {
					require.NoError(t, err)
					if c, ok := ev.Payload.(model.Chunk); ok && ev.Kind == nodes.KindModelDelta && c.Reasoning != nil {
						reasoning.WriteString(c.Reasoning.Text)
					}
					if s, ok := ev.State.(agent.State); ok && ev.Kind == graph.KindDone {
						out = s
					}
				}
				assert.Equal(t, "Oslo needs a lookup.", reasoning.String(), "the thinking streams as it comes")
			} else {
				out, err = g.Invoke(ctx, agent.Ask("Weather in Oslo?"), graph.WithThread("t"))
				require.NoError(t, err)
			}
			assert.Equal(t, "Sunny in Oslo.", agent.FinalText(out.Messages))
			require.Len(t, out.Messages, 4)
			assert.Equal(t, "Oslo needs a lookup.", out.Messages[1].Reasoning())
			assert.Empty(t, out.Messages[1].Text())

			reqs := srv.requests()
			require.Len(t, reqs, 2)
			assert.JSONEq(t, `{"type":"enabled","budget_tokens":2048}`, string(reqs[0]["thinking"]))
			var msgs []struct {
				Role    string            `json:"role"`
				Content []json.RawMessage `json:"content"`
			}
			require.NoError(t, json.Unmarshal(reqs[1]["messages"], &msgs))
			require.Len(t, msgs, 3)
			require.Equal(t, "assistant", msgs[1].Role)
			require.Len(t, msgs[1].Content, 2)
			assert.JSONEq(t, `{"type":"thinking","thinking":"Oslo needs a lookup.","signature":"sig-Oslo"}`, string(msgs[1].Content[0]))
			assert.Contains(t, string(msgs[1].Content[1]), `"tool_use"`)

			// The checkpoint keeps the thinking, signature included.
			snap, err := g.GetState(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, out.Messages[1].Content, snap.State.Messages[1].Content)
		})
	}
}
