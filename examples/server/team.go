package main

import (
	"context"
	"strings"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/supervisor/system"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
)

// newSupervisor builds the supervisor of examples/supervisor on its
// scripted models (examples/supervisor/system) and tools of its own,
// checkpointed by saver (the runs Manager's). Its workers run inside its
// runs, checkpointed in namespaces of their own.
func newSupervisor(saver state.Saver) (*graph.Graph[agent.State], error) {
	models := system.Scripted()
	researcher, err := agent.NewReAct(models.Researcher,
		agent.WithName("researcher"),
		agent.WithSystemPrompt("You are a careful researcher. Search the notes, then reply with a short list of facts, one per line, each starting with \"- \"."),
		agent.WithTools(searchTool()))
	if err != nil {
		return nil, err
	}
	writer, err := agent.NewReAct(models.Writer,
		agent.WithName("writer"),
		agent.WithSystemPrompt("You are a technical writer. Read the house style guide first, follow it, and reply with the requested text only."),
		agent.WithTools(styleGuideTool()))
	if err != nil {
		return nil, err
	}
	return agent.NewSupervisor(models.Supervisor, []agent.Worker{
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

// shutdownGrace bounds how long the server waits for open requests when
// it stops.
const shutdownGrace = 5 * time.Second
