package system

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/examples/internal/transcript"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/handoff"
)

// The offline models. Each plays the part of its agent by reading the
// conversation it is given, the way a real model would, so that the same
// script works whatever order the parallel workers finish in.

func scriptedSupervisor() *scripted.Model {
	return scripted.Policy("scripted-supervisor", func(req *model.Request) (model.Message, error) {
		results := transcript.ToolResults(req.Messages)
		switch len(results) {
		case 0:
			return model.Assistant("The research and the title do not depend on each other: I ask for both at once.",
				scripted.Call("researcher", `{"task":"Find the key facts about goroutines: what they are, what they cost, how they are scheduled."}`),
				scripted.Call("writer", `{"task":"Propose a title for a short explainer of goroutines for Go newcomers. Reply with the title only."}`)), nil
		case 2:
			// Results come in call order: the researcher's, then the writer's.
			facts, title := results[0].Text(), results[1].Text()
			args, err := json.Marshal(handoff.Args{
				Task:    "Write one paragraph explaining goroutines to Go newcomers, using only these facts. Put the title on the first line.",
				Context: "Title: " + title + "\n\nFacts:\n" + facts,
			})
			if err != nil {
				return model.Message{}, err
			}
			return model.Assistant("", scripted.Call("writer", string(args))), nil
		case 3:
			// The writer's paragraph is the answer.
			return model.Assistant(results[2].Text()), nil
		}
		return model.Message{}, fmt.Errorf("unexpected conversation: %d tool results after the question", len(results))
	})
}

func scriptedResearcher() *scripted.Model {
	return scripted.Policy("scripted-researcher", func(req *model.Request) (model.Message, error) {
		results := transcript.ToolResults(req.Messages)
		if len(results) == 0 {
			return model.Assistant("",
				scripted.Call("search", `{"query":"goroutine"}`),
				scripted.Call("search", `{"query":"scheduler"}`)), nil
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
	return scripted.Policy("scripted-writer", func(req *model.Request) (model.Message, error) {
		if len(transcript.ToolResults(req.Messages)) == 0 {
			return model.Assistant("", scripted.Call("style_guide", `{}`)), nil
		}
		t := transcript.LastUser(req.Messages)
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
