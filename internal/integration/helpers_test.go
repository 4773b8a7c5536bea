package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// reactive returns a scripted model whose every reply is computed from the
// request, so that a fresh instance (a restarted process) carries on a
// conversation where an earlier one left it.
func reactive(name string, reply func(msgs []model.Message) model.Message) *scripted.Model {
	m := scripted.New()
	m.Name = name
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: reply(req.Messages)}, nil
	})
	m.Fallback = &step
	return m
}

// userTurns counts the user messages of msgs.
func userTurns(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == model.RoleUser {
			n++
		}
	}
	return n
}

// lastUser returns the text of the last user message.
func lastUser(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

// trailingToolTexts returns the texts of the tool messages that end msgs,
// in order.
func trailingToolTexts(msgs []model.Message) []string {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == model.RoleTool {
		i--
	}
	out := make([]string, 0, len(msgs)-i)
	for _, m := range msgs[i:] {
		out = append(out, m.Text())
	}
	return out
}

// oneToolWorker is a worker model that calls toolName once with args(task)
// and then answers with prefix and the tool's result.
func oneToolWorker(name, toolName, prefix string, args func(task string) string) *scripted.Model {
	return reactive(name, func(msgs []model.Message) model.Message {
		last := msgs[len(msgs)-1]
		if last.Role == model.RoleTool {
			return model.Assistant(prefix + last.Text())
		}
		return model.Assistant("", scripted.Call(toolName, args(last.Text())))
	})
}

// toolMessage returns the tool message answering call id.
func toolMessage(t *testing.T, msgs []model.Message, id string) model.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == model.RoleTool && m.ToolCallID == id {
			return m
		}
	}
	require.Failf(t, "no tool message", "for call %s", id)
	return model.Message{}
}

// jsonArgs encodes v as tool call arguments.
func jsonArgs(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// approvalTool asks a human to approve a payment before making it.
func approvalTool(paid *counter) tool.Tool {
	return tool.MustFunc("pay", "pays an invoice once a human approves", func(ctx context.Context, in struct {
		Invoice string `json:"invoice"`
	}) (string, error) {
		ok, err := graph.Interrupt[bool](ctx, "approve payment of "+in.Invoice+"?")
		if err != nil {
			return "", err
		}
		if !ok {
			return "payment of " + in.Invoice + " declined", nil
		}
		paid.add(in.Invoice)
		return "paid " + in.Invoice, nil
	})
}

// counter records what happened, safely across goroutines.
type counter struct {
	ch chan string
}

func newCounter() *counter { return &counter{ch: make(chan string, 100)} }

func (c *counter) add(s string) { c.ch <- s }

func (c *counter) drain() []string {
	var out []string
	for {
		select {
		case s := <-c.ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// collect drains a stream into its events and final error.
func collect(seq func(func(graph.Event, error) bool)) ([]graph.Event, error) {
	var (
		evs []graph.Event
		err error
	)
	for ev, e := range seq {
		if e != nil {
			err = e
			continue
		}
		evs = append(evs, ev)
	}
	return evs, err
}

// describe renders an event briefly, for failure messages.
func describe(ev graph.Event) string {
	return fmt.Sprintf("%s %s/%s %s", ev.Kind, strings.Join(ev.Path, "/"), ev.Node, ev.Name)
}

// slow skips t under -short: it takes seconds (-short keeps to what runs
// in about a second, with no server, database or browser).
func slow(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("takes seconds (skipped with -short)")
	}
}
