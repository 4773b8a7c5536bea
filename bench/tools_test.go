package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	ttool "github.com/trellis-go/trellis/tool"
)

// echoArgs are the arguments of the echo tool on both sides.
type echoArgs struct {
	Text string `json:"text"`
}

func echo(_ context.Context, in echoArgs) (string, error) { return in.Text, nil }

// trellisEcho is the echo tool as a typed Trellis tool. It is marked
// concurrency-safe: the parallel executor runs a batch sequentially unless
// every tool in it says it may run alongside the others.
func trellisEcho() ttool.Tool {
	return ttool.MustFunc("echo", "Repeats the text it is given.", echo,
		ttool.WithMetadata(ttool.Metadata{ConcurrencySafe: true, ReadOnly: true}))
}

func einoEcho(b *testing.B) tool.InvokableTool {
	t, err := utils.InferTool("echo", "Repeats the text it is given.", echo)
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// chatState is the graph state of the Trellis side: a conversation.
type chatState struct {
	nodes.Chat
}

func callID(i int) string   { return fmt.Sprintf("call_%d", i) }
func echoText(i int) string { return fmt.Sprintf("echo %d", i) }
func echoJSON(i int) string { return fmt.Sprintf(`{"text":%q}`, echoText(i)) }

// trellisBatch is a conversation whose last message is an assistant message
// with n echo calls, as an LLM node leaves it (nodes.AppendReply): with
// room for the tool messages that answer the calls, which the ToolsNode
// writes in place. With clipped, the slice has no spare capacity, as when
// the engine runs the ToolsNode alongside other nodes of its superstep or
// the caller built the state: every run of the ToolsNode then appends to a
// copy of the conversation.
func trellisBatch(n int, clipped bool) chatState {
	calls := make([]model.ToolCall, n)
	for i := range calls {
		calls[i] = model.ToolCall{ID: callID(i), Name: "echo", Arguments: []byte(echoJSON(i))}
	}
	msgs := []model.Message{model.User("go")}
	nodes.AppendReply(&msgs, model.Assistant("", calls...))
	if clipped {
		msgs = slices.Clip(msgs)
	}
	return chatState{Chat: nodes.Chat{Messages: msgs}}
}

// einoBatch is the same assistant message in Eino's vocabulary.
func einoBatch(n int) *schema.Message {
	calls := make([]schema.ToolCall, n)
	for i := range calls {
		calls[i] = schema.ToolCall{ID: callID(i), Type: "function",
			Function: schema.FunctionCall{Name: "echo", Arguments: echoJSON(i)}}
	}
	return schema.AssistantMessage("", calls)
}

type toolsSize struct {
	name       string
	calls      int
	sequential bool
}

var toolsSizes = []toolsSize{
	{"1", 1, false},
	{"8seq", 8, true},
	{"8", 8, false},
	{"64", 64, false},
}

// BenchmarkToolsNode runs one batch of echo calls through a ToolsNode,
// called directly rather than inside a graph: 1 call, 8 calls with the
// sequential executor (8seq), and 8 and 64 calls with the parallel one.
//
// The Trellis ToolsNode is configured as a graph uses it by default: its
// executor forwards tool events to the run's stream (nodes.ToolEvents), which
// costs nothing here since there is no stream. Eino's ToolsNode runs without
// callback handlers. Both decode the arguments into the same struct and
// answer with the text; Trellis also validates them against the tool's
// schema. Eino's ToolsNode returns the tool messages; Trellis's returns the
// new state, the conversation with the tool messages written into it.
//
// "trellis" gets the conversation as an LLM node leaves it, with room for
// the answers; "trellis-clipped" gets it without spare capacity, so that
// the node copies the conversation too (see trellisBatch).
func BenchmarkToolsNode(b *testing.B) {
	ctx := context.Background()
	for _, size := range toolsSizes {
		b.Run(size.name, func(b *testing.B) {
			n := size.calls
			lastID, last := callID(n-1), echoText(n-1)
			trellis := func(clipped bool) func(b *testing.B) {
				return func(b *testing.B) {
					opts := []nodes.ToolsOption{nodes.WithTools(trellisEcho())}
					if size.sequential {
						opts = append(opts, nodes.WithExecutor(executor.Sequential(nodes.StreamToolEvents())))
					} else {
						opts = append(opts, nodes.WithExecutor(executor.Parallel(nodes.StreamToolEvents())))
					}
					node := nodes.Tools[chatState]("llm", opts...)
					in := trellisBatch(n, clipped)
					b.ReportAllocs()
					for b.Loop() {
						out, cmd, err := node(ctx, in)
						if err != nil {
							b.Fatal(err)
						}
						msgs := out.Messages
						if len(msgs) != 2+n || len(cmd.Goto) != 1 || cmd.Goto[0] != "llm" {
							b.Fatalf("got %d messages and %v, want %d and [llm]", len(msgs), cmd.Goto, 2+n)
						}
						if m := msgs[len(msgs)-1]; m.Role != model.RoleTool || m.IsError || m.ToolCallID != lastID || m.Text() != last {
							b.Fatalf("last message: %+v, want the answer %q to %s", m, last, lastID)
						}
						if copied := &msgs[0] != &in.Messages[0]; copied != clipped {
							b.Fatalf("copied the conversation: %v, want %v", copied, clipped)
						}
					}
				}
			}
			b.Run("trellis", trellis(false))
			b.Run("trellis-clipped", trellis(true))
			b.Run("eino", func(b *testing.B) {
				tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
					Tools:               []tool.BaseTool{einoEcho(b)},
					ExecuteSequentially: size.sequential,
				})
				if err != nil {
					b.Fatal(err)
				}
				in := einoBatch(n)
				b.ReportAllocs()
				for b.Loop() {
					out, err := tn.Invoke(ctx, in)
					if err != nil {
						b.Fatal(err)
					}
					if len(out) != n {
						b.Fatalf("got %d messages, want %d", len(out), n)
					}
					if m := out[n-1]; m.Role != schema.Tool || m.ToolCallID != lastID || m.Content != last {
						b.Fatalf("last message: %+v, want the answer %q to %s", m, last, lastID)
					}
				}
			})
		})
	}
}
