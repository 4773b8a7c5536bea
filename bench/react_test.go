package bench

import (
	"context"
	"fmt"
	"iter"
	"testing"

	einomodel "github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

// hops is the number of model→tool round trips of one ReAct run: the model
// makes one echo call per turn, five times, then answers "done".
const hops = 5

var (
	hopIDs   [hops]string
	hopTexts [hops]string
	hopArgs  [hops]string
)

func init() {
	for i := range hops {
		hopIDs[i] = fmt.Sprintf("hop_%d", i+1)
		hopTexts[i] = fmt.Sprintf("hop %d", i+1)
		hopArgs[i] = fmt.Sprintf(`{"text":%q}`, hopTexts[i])
	}
}

// nextHop decides a turn of the scripted conversation from how many tool
// answers it holds, and checks that the last one echoed the last call.
// Both frameworks' fake models use it.
func nextHop(answered int, lastAnswer string) (hop int, done bool, err error) {
	if answered > 0 && lastAnswer != hopTexts[answered-1] {
		return 0, false, fmt.Errorf("tool answer %d is %q, want %q", answered, lastAnswer, hopTexts[answered-1])
	}
	return answered, answered >= hops, nil
}

// trellisHops is a Trellis model that plays the five-hop script from the
// request alone, so one instance serves every run. It does what Eino's
// einoHops does, so that the two loops compare the frameworks, not their
// test doubles.
type trellisHops struct{}

func (trellisHops) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	answered, last := 0, ""
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			answered++
			last = m.Text()
		}
	}
	hop, done, err := nextHop(answered, last)
	if err != nil {
		return nil, err
	}
	if done {
		return &model.Response{Message: model.Assistant("done"), FinishReason: "stop"}, nil
	}
	call := model.ToolCall{ID: hopIDs[hop], Name: "echo", Arguments: []byte(hopArgs[hop])}
	return &model.Response{Message: model.Assistant("", call), FinishReason: "tool_calls"}, nil
}

func (m trellisHops) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return m.streamOf(m.Generate(ctx, req))
}

// streamOf streams a scripted model's response: its text, its tool calls,
// its finish reason.
func (trellisHops) streamOf(resp *model.Response, err error) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if t := resp.Message.Text(); t != "" && !yield(model.Chunk{Text: t}, nil) {
			return
		}
		for i, c := range resp.Message.ToolCalls {
			d := &model.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)}
			if !yield(model.Chunk{ToolCall: d}, nil) {
				return
			}
		}
		yield(model.Chunk{FinishReason: resp.FinishReason}, nil)
	}
}

// einoHops is the same model for Eino.
type einoHops struct{}

func (einoHops) Generate(_ context.Context, input []*schema.Message, _ ...einomodel.Option) (*schema.Message, error) {
	answered, last := 0, ""
	for _, m := range input {
		if m.Role == schema.Tool {
			answered++
			last = m.Content
		}
	}
	hop, done, err := nextHop(answered, last)
	if err != nil {
		return nil, err
	}
	if done {
		return schema.AssistantMessage("done", nil), nil
	}
	call := schema.ToolCall{ID: hopIDs[hop], Type: "function", Function: schema.FunctionCall{Name: "echo", Arguments: hopArgs[hop]}}
	return schema.AssistantMessage("", []schema.ToolCall{call}), nil
}

func (m einoHops) Stream(ctx context.Context, input []*schema.Message, opts ...einomodel.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m einoHops) WithTools([]*schema.ToolInfo) (einomodel.ToolCallingChatModel, error) {
	return m, nil
}

// trellisReAct builds the ReAct loop the nodes package documents: an LLM
// node on m, a ToolsNode with the echo tool, and ToolsCondition between them.
func trellisReAct(b *testing.B, m model.Model) *graph.Graph[chatState] {
	echo := trellisEcho()
	g := graph.New[chatState](nodes.MessagesReducer[chatState]()).
		AddNode("llm", nodes.LLM[chatState](m, nodes.WithTools(echo))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[chatState]("tools"), "tools", graph.END)
	nodes.AddTools[chatState](g, "tools", "llm", nodes.WithTools(echo))
	c, err := g.Compile()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// checkTrellisRun checks a finished run: the user message, five calls each
// answered by its echo, and the final reply.
func checkTrellisRun(b *testing.B, out chatState, err error) {
	if err != nil {
		b.Fatal(err)
	}
	msgs := out.Messages
	if len(msgs) != 2+2*hops {
		b.Fatalf("got %d messages, want %d", len(msgs), 2+2*hops)
	}
	if m := msgs[len(msgs)-2]; m.Role != model.RoleTool || m.ToolCallID != hopIDs[hops-1] || m.Text() != hopTexts[hops-1] {
		b.Fatalf("last tool message: %+v", m)
	}
	if m := msgs[len(msgs)-1]; m.Role != model.RoleAssistant || m.Text() != "done" {
		b.Fatalf("final message: %+v", m)
	}
}

// runModelKey carries the model of one run (see perRun).
type runModelKey struct{}

// perRun plays the model.Model that the run's context carries, so that a
// compiled graph can use a fresh scripted.Model on every run.
type perRun struct{}

func (perRun) of(ctx context.Context) model.Model { return ctx.Value(runModelKey{}).(model.Model) }

func (p perRun) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	return p.of(ctx).Generate(ctx, req)
}

func (p perRun) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return p.of(ctx).Stream(ctx, req)
}

// script is the five-hop conversation as a script of the scripted model.
func script() []scripted.Step {
	steps := make([]scripted.Step, 0, hops+1)
	for i := range hops {
		steps = append(steps, scripted.CallTools(scripted.CallWithID(hopIDs[i], "echo", hopArgs[i])))
	}
	return append(steps, scripted.Reply("done"))
}

// BenchmarkReActLoop runs a whole ReAct agent: the model calls the echo tool
// once per turn for five turns, then answers. It measures what a framework
// costs per run around a model and a tool that cost nothing: eleven node
// runs (six model turns, five tool batches), routing, and the transcript.
//
// trellis and eino use equivalent hand-written models that answer from the
// request (einoHops, trellisHops), Eino through its flow/agent/react agent.
// trellis-scripted runs the same Trellis loop on model/scripted, a fresh
// Model per run (it records every request, so one Model cannot serve all
// runs); the difference to trellis is what that test double costs.
func BenchmarkReActLoop(b *testing.B) {
	ctx := context.Background()
	b.Run("trellis", func(b *testing.B) {
		g := trellisReAct(b, trellisHops{})
		in := chatState{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}
		b.ReportAllocs()
		for b.Loop() {
			out, err := g.Invoke(ctx, in)
			checkTrellisRun(b, out, err)
		}
	})
	b.Run("trellis-scripted", func(b *testing.B) {
		g := trellisReAct(b, perRun{})
		steps := script()
		in := chatState{Chat: nodes.Chat{Messages: []model.Message{model.User("go")}}}
		b.ReportAllocs()
		for b.Loop() {
			m := scripted.New(steps...)
			out, err := g.Invoke(context.WithValue(ctx, runModelKey{}, model.Model(m)), in)
			checkTrellisRun(b, out, err)
			if m.Remaining() != 0 {
				b.Fatalf("%d steps of the script were not played", m.Remaining())
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		agent, err := react.NewAgent(ctx, &react.AgentConfig{
			ToolCallingModel: einoHops{},
			ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{einoEcho(b)}},
			MaxStep:          4 * hops,
		})
		if err != nil {
			b.Fatal(err)
		}
		in := []*schema.Message{schema.UserMessage("go")}
		b.ReportAllocs()
		for b.Loop() {
			out, err := agent.Generate(ctx, in)
			if err != nil {
				b.Fatal(err)
			}
			if out.Role != schema.Assistant || out.Content != "done" {
				b.Fatalf("final message: %+v", out)
			}
		}
	})
}
