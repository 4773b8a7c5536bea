package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/workspace"
)

func ExampleNew() {
	dir, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "greeting.txt"), []byte("Hello, world!\n"), 0o644); err != nil {
		panic(err)
	}

	ws, err := workspace.New(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	// A scripted model stands in for a real one: it looks for text files,
	// reads one, edits it, and answers.
	coder, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(workspace.ListFilesName, `{"pattern":"**/*.txt"}`)),
		scripted.CallTools(scripted.Call(workspace.ReadFileName, `{"path":"greeting.txt"}`)),
		scripted.CallTools(scripted.Call(workspace.EditFileName, `{"path":"greeting.txt","old_string":"world","new_string":"gopher"}`)),
		scripted.Reply("The greeting now says hello to gophers."),
	), agent.WithToolsets(ws))
	if err != nil {
		panic(err)
	}
	out, err := coder.Invoke(context.Background(), agent.Ask("Greet gophers instead of the world."))
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		if m.Role == model.RoleTool {
			fmt.Printf("%s:\n%s\n", m.ToolName, m.Text())
		}
	}
	content, err := os.ReadFile(filepath.Join(dir, "greeting.txt"))
	if err != nil {
		panic(err)
	}
	fmt.Print("greeting.txt now holds: ", string(content))
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// list_files:
	// greeting.txt
	// read_file:
	//      1	Hello, world!
	// edit_file:
	// Edited "greeting.txt": replaced 1 occurrence, at line 1.
	// greeting.txt now holds: Hello, gopher!
	// The greeting now says hello to gophers.
}
