package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/examples/internal/transcript"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/handoff"
)

// The offline models. Each plays its agent by reading the conversation it
// is given, as a real model would: the researcher on the far side of the
// A2A connection sees only the task the supervisor sent.

// researchTask is what the offline supervisor asks the researcher.
const researchTask = "Find the key facts about the history of the Go programming language: who designed it, when it was announced, and when Go 1 came out."

func scriptedSupervisor() *scripted.Model {
	return scripted.Policy("scripted-supervisor", func(req *model.Request) (model.Message, error) {
		results := transcript.ToolResults(req.Messages)
		switch {
		case len(results) == 0:
			return model.Assistant("The facts first: the researcher, over A2A.",
				scripted.Call("researcher", `{"task":`+quote(researchTask)+`}`)), nil
		case len(results) == 1 && results[0].IsError:
			// The researcher failed or could not be reached: no facts, no
			// note. Say why rather than make facts up.
			return model.Assistant("I could not get the facts, so I cannot write the note. The researcher failed: " + results[0].Text()), nil
		case len(results) == 1:
			args, err := json.Marshal(handoff.Args{
				Task:    "Write a short note for the team newsletter on the history of Go, using only these facts. Put a title on the first line.",
				Context: results[0].Text(),
			})
			if err != nil {
				return model.Message{}, err
			}
			return model.Assistant("Now the writer, here in this process.", scripted.Call("writer", string(args))), nil
		case len(results) == 2 && !results[1].IsError:
			return model.Assistant(results[1].Text()), nil
		}
		return model.Message{}, fmt.Errorf("unexpected conversation: %d tool results after the question", len(results))
	})
}

func scriptedResearcher() *scripted.Model {
	return scripted.Policy("scripted-researcher", func(req *model.Request) (model.Message, error) {
		results := transcript.ToolResults(req.Messages)
		if len(results) == 0 {
			return model.Assistant("",
				scripted.Call("lookup", `{"topic":"designers"}`),
				scripted.Call("lookup", `{"topic":"announcement"}`),
				scripted.Call("lookup", `{"topic":"go 1"}`)), nil
		}
		var facts []string
		for _, r := range results {
			facts = append(facts, "- "+r.Text())
		}
		return model.Assistant(strings.Join(facts, "\n")), nil
	})
}

func scriptedWriter() *scripted.Model {
	return scripted.Policy("scripted-writer", func(req *model.Request) (model.Message, error) {
		var sentences []string
		for _, line := range strings.Split(transcript.LastUser(req.Messages), "\n") {
			if fact, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
				sentences = append(sentences, fact)
			}
		}
		if len(sentences) == 0 {
			return model.Message{}, fmt.Errorf("the task has no facts: %q", transcript.LastUser(req.Messages))
		}
		return model.Assistant("Go, from idea to 1.0\n\n" + strings.Join(sentences, " ")), nil
	})
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}
