//go:build unix

package coding_test

import (
	"context"
	"fmt"
	"os"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/coding"
)

func ExampleNew() {
	dir, err := os.MkdirTemp("", "coding-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	set, err := coding.New(dir, coding.WithoutWeb())
	if err != nil {
		panic(err)
	}
	defer set.Close()

	// A scripted model stands in for a real one: it writes a test, runs
	// it, and reports.
	coder, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call("write_file", `{"path":"check.sh","content":"test 2 -eq $((1 + 1)) && echo ok\n"}`)),
		scripted.CallTools(scripted.Call("bash", `{"command":"sh check.sh","description":"run the check"}`)),
		scripted.Reply("The check passes."),
	), agent.WithToolsets(set))
	if err != nil {
		panic(err)
	}
	out, err := coder.Invoke(context.Background(), agent.Ask("Check that 1 + 1 is 2."))
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		if m.Role == model.RoleTool {
			fmt.Printf("%s:\n%s\n", m.ToolName, m.Text())
		}
	}
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// write_file:
	// Created "check.sh" (1 line, 33 bytes).
	// bash:
	// ok
	// Exit code: 0
	// The check passes.
}
