//go:build unix

package shell_test

import (
	"context"
	"fmt"
	"os"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/shell"
)

func ExampleNew() {
	dir, err := os.MkdirTemp("", "shell-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	sh, err := shell.New(dir)
	if err != nil {
		panic(err)
	}
	defer sh.Close()

	// A scripted model stands in for a real one: it runs two commands and
	// answers. A real application also adds a permission policy that has a
	// person approve each command (see the package documentation).
	coder, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(shell.BashName, `{"command":"echo hello > greeting.txt && cat greeting.txt"}`)),
		scripted.CallTools(scripted.Call(shell.BashName, `{"command":"ls missing.txt 2>/dev/null || { echo no such file; exit 2; }"}`)),
		scripted.Reply("greeting.txt says hello; missing.txt does not exist."),
	), agent.WithToolsets(sh))
	if err != nil {
		panic(err)
	}
	out, err := coder.Invoke(context.Background(), agent.Ask("Write a greeting, then look for missing.txt."))
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		if m.Role == model.RoleTool {
			fmt.Printf("%s (error: %v):\n%s\n", m.ToolName, m.IsError, m.Text())
		}
	}
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// bash (error: false):
	// hello
	// Exit code: 0
	// bash (error: true):
	// no such file
	// Exit code: 2
	// greeting.txt says hello; missing.txt does not exist.
}

func Example_backgroundTask() {
	sh, err := shell.New(os.TempDir())
	if err != nil {
		panic(err)
	}
	defer sh.Close()
	tools, err := sh.Tools(context.Background())
	if err != nil {
		panic(err)
	}
	byName := map[string]tool.Tool{}
	for _, t := range tools {
		byName[tool.Name(t)] = t
	}
	ctx := context.Background()
	call := func(name, args string) tool.Result {
		return tool.Invoke(ctx, byName[name], model.ToolCall{ID: "call-1", Name: name, Arguments: []byte(args)})
	}

	// Start a task in the background, then wait for it and read its
	// output. The model reads the results' text; Details hold a Report.
	started := call(shell.BashName, `{"command":"echo working; echo done","run_in_background":true,"description":"Say two things"}`)
	id := started.Details.(shell.Report).TaskID
	fmt.Println("started", id)

	read := call(shell.TaskOutputName, fmt.Sprintf(`{"task_id":%q,"block":true}`, id))
	rep := read.Details.(shell.Report)
	fmt.Printf("%s %s, exit code %d, %d bytes of output\n", rep.TaskID, rep.State, rep.ExitCode, rep.OutputBytes)
	// Output:
	// started task-1
	// task-1 exited, exit code 0, 13 bytes of output
}
