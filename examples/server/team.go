package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// newSupervisor builds the supervisor of examples/supervisor on scripted
// models, checkpointed by saver (the runs Manager's). Its workers run
// inside its runs, checkpointed in namespaces of their own.
func newSupervisor(saver state.Saver) (*graph.Graph[agent.State], error) {
	researcher, err := agent.NewReAct(scriptedResearcher(),
		agent.WithName("researcher"),
		agent.WithSystemPrompt("You are a careful researcher. Search the notes, then reply with a short list of facts, one per line, each starting with \"- \"."),
		agent.WithTools(searchTool()))
	if err != nil {
		return nil, err
	}
	writer, err := agent.NewReAct(scriptedWriter(),
		agent.WithName("writer"),
		agent.WithSystemPrompt("You are a technical writer. Read the house style guide first, follow it, and reply with the requested text only."),
		agent.WithTools(styleGuideTool()))
	if err != nil {
		return nil, err
	}
	return agent.NewSupervisor(scriptedSupervisor(), []agent.Worker{
		{Name: "researcher", Description: "Searches the team's notes and returns the relevant facts as a list.", Agent: researcher},
		{Name: "writer", Description: "Writes titles and short texts for newcomers in the house style. Give it the facts to use as context.", Agent: writer},
	}, agent.WithCheckpointer(saver))
}

// notes is the knowledge base the researcher searches.
var notes = []struct{ topic, text string }{
	{"goroutine", "A goroutine is a function running concurrently with other goroutines in the same address space; a go statement starts one."},
	{"goroutine stack memory", "A goroutine starts with a small stack of a few kilobytes that grows and shrinks as needed."},
	{"scheduler runtime threads", "The Go runtime schedules goroutines onto a few OS threads; when one goroutine blocks, the others keep running."},
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"minLength=1" jsonschema_description:"A word or two to look for."`
}

func searchTool() tool.Tool {
	return tool.MustFunc("search", "Searches the team's notes on Go and returns the matching notes.",
		func(ctx context.Context, in searchArgs) (string, error) {
			var found []string
			for _, n := range notes {
				for _, q := range strings.Fields(strings.ToLower(in.Query)) {
					if strings.Contains(n.topic, q) {
						found = append(found, n.text)
						break
					}
				}
			}
			if len(found) == 0 {
				return "No note matches " + in.Query + ".", nil
			}
			return strings.Join(found, "\n"), nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

func styleGuideTool() tool.Tool {
	return tool.MustFunc("style_guide", "Returns the house style guide for texts for newcomers.",
		func(ctx context.Context, _ struct{}) (string, error) {
			return "Titles: at most six words, no colon. Texts: one paragraph, short sentences, present tense.", nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

// policy returns a scripted model that answers every request with fn, by
// reading the conversation as a real model would.
func policy(name string, fn func(req *model.Request) (model.Message, error)) *scripted.Model {
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		msg, err := fn(req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &model.Response{Message: msg}, nil
	})
	m := scripted.New()
	m.Name = name
	m.Fallback = &step
	return m
}

// toolResults returns the tool messages after the last user message.
func toolResults(msgs []model.Message) []model.Message {
	var out []model.Message
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != model.RoleUser; i-- {
		if msgs[i].Role == model.RoleTool {
			out = append([]model.Message{msgs[i]}, out...)
		}
	}
	return out
}

func lastTask(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

func scriptedSupervisor() *scripted.Model {
	return policy("scripted-supervisor", func(req *model.Request) (model.Message, error) {
		results := toolResults(req.Messages)
		switch len(results) {
		case 0:
			return model.Assistant("I ask for the research and a title at once.",
				scripted.Call("researcher", `{"task":"Find the key facts about goroutines."}`),
				scripted.Call("writer", `{"task":"Propose a title for a short explainer of goroutines. Reply with the title only."}`)), nil
		case 2:
			args, err := json.Marshal(handoff.Args{
				Task:    "Write one paragraph explaining goroutines to newcomers, using only these facts. Put the title on the first line.",
				Context: "Title: " + results[1].Text() + "\n\nFacts:\n" + results[0].Text(),
			})
			if err != nil {
				return model.Message{}, err
			}
			return model.Assistant("", scripted.Call("writer", string(args))), nil
		case 3:
			return model.Assistant(results[2].Text()), nil
		}
		return model.Message{}, fmt.Errorf("unexpected conversation: %d tool results after the question", len(results))
	})
}

func scriptedResearcher() *scripted.Model {
	return policy("scripted-researcher", func(req *model.Request) (model.Message, error) {
		results := toolResults(req.Messages)
		if len(results) == 0 {
			return model.Assistant("", scripted.Call("search", `{"query":"goroutine"}`), scripted.Call("search", `{"query":"scheduler"}`)), nil
		}
		var facts []string
		for _, r := range results {
			for _, line := range strings.Split(r.Text(), "\n") {
				facts = append(facts, "- "+line)
			}
		}
		return model.Assistant(strings.Join(facts, "\n")), nil
	})
}

func scriptedWriter() *scripted.Model {
	return policy("scripted-writer", func(req *model.Request) (model.Message, error) {
		if len(toolResults(req.Messages)) == 0 {
			return model.Assistant("", scripted.Call("style_guide", `{}`)), nil
		}
		t := lastTask(req.Messages)
		if strings.Contains(t, "Propose a title") {
			return model.Assistant("Meet the goroutine"), nil
		}
		var title string
		var sentences []string
		for _, line := range strings.Split(t, "\n") {
			switch {
			case strings.HasPrefix(line, "Title: "):
				title = strings.TrimPrefix(line, "Title: ")
			case strings.HasPrefix(line, "- "):
				sentences = append(sentences, strings.TrimPrefix(line, "- "))
			}
		}
		if title == "" || len(sentences) == 0 {
			return model.Message{}, fmt.Errorf("the task has no title or no facts: %q", t)
		}
		return model.Assistant(title + "\n\n" + strings.Join(sentences, " ")), nil
	})
}

// shutdownGrace bounds how long the server waits for open requests when
// it stops.
const shutdownGrace = 5 * time.Second
