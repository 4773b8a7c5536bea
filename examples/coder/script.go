package main

import (
	"encoding/json"
	"strings"

	"github.com/trellis-go/trellis/examples/internal/transcript"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/shell"
	"github.com/trellis-go/trellis/tool/workspace"
)

// The lines of the fix the offline script makes.
const (
	buggyLine = "for i := 1; i < n; i++ {"
	fixedLine = "for i := 1; i <= n; i++ {"
)

// offline is the model the example plays without a provider: it runs the
// tests, reads the code, fixes it, runs the tests again and answers. It
// reads the conversation as a model would — the last tool result decides
// the next step — so that a refused call or an unexpected output ends the
// run with an answer that says what happened.
func offline() model.Model {
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: nextStep(req.Messages)}, nil
	})
	m := scripted.New()
	m.Fallback = &step
	return m
}

func nextStep(msgs []model.Message) model.Message {
	results := transcript.ToolResults(msgs)
	if len(results) == 0 {
		return model.Assistant("First, the tests as they are.", runTests())
	}
	last := results[len(results)-1]
	edited := false
	for _, r := range results {
		edited = edited || r.ToolName == "edit_file" && !r.IsError
	}
	switch {
	case last.IsError && strings.Contains(last.Text(), `"permission_denied"`):
		return model.Assistant("I stopped: " + last.ToolName + " was refused, so I changed nothing on my own. " +
			"The bug is in calc.go: SumTo's loop stops one short of n (`i < n`); changing the condition to `i <= n` fixes it.")
	case last.ToolName == "bash" && !last.IsError && edited:
		return model.Assistant("Fixed. SumTo's loop stopped one short of n (`" + buggyLine + "`), so SumTo(n) left n out of the sum. " +
			"It now runs to n inclusive (`" + fixedLine + "`), and `go test ./...` passes.")
	case last.ToolName == "bash" && !last.IsError:
		return model.Assistant("The tests pass as they are: there is nothing to fix.")
	case last.ToolName == "bash" && edited:
		return model.Assistant("The tests still fail after my change:\n\n" + last.Text())
	case last.ToolName == "bash":
		return model.Assistant("TestSumTo fails: every sum lacks its last term. Let me read SumTo.",
			call("read_file", workspace.ReadFileArgs{Path: "calc.go"}))
	case last.ToolName == "read_file" && strings.Contains(last.Text(), buggyLine):
		return model.Assistant("The loop stops at n-1: its condition must be `i <= n`.",
			call("edit_file", workspace.EditFileArgs{Path: "calc.go", OldString: buggyLine, NewString: fixedLine}))
	case last.ToolName == "edit_file" && !last.IsError:
		return model.Assistant("Now the tests again.", runTests())
	}
	return model.Assistant("I did not expect this result of " + last.ToolName + ", and stop here:\n\n" + last.Text())
}

func runTests() model.ToolCall {
	return call("bash", shell.BashArgs{Command: "go test ./...", Description: "Run the tests"})
}

// call makes a tool call with args as its JSON arguments, written with <
// and > as they are (json.Marshal would escape them for HTML).
func call(name string, args any) model.ToolCall {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(args) // structs of strings, numbers and booleans always encode
	return scripted.Call(name, strings.TrimSpace(b.String()))
}
