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

func ExampleNew_notebook() {
	dir, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// A notebook as Jupyter writes it: nbformat 4.4 cells have no ids.
	const nb = `{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "3.14\n"
     ]
    }
   ],
   "source": [
    "print(3.14)"
   ]
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 4
}
`
	if err := os.WriteFile(filepath.Join(dir, "pi.ipynb"), []byte(nb), 0o644); err != nil {
		panic(err)
	}

	ws, err := workspace.New(dir)
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	// The scripted model reads the notebook, changes its code cell and
	// puts a title above it.
	coder, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(workspace.ReadFileName, `{"path":"pi.ipynb"}`)),
		scripted.CallTools(scripted.Call(workspace.NotebookEditName, `{"path":"pi.ipynb","cell_number":0,"new_source":"import math\nprint(math.pi)"}`)),
		scripted.CallTools(scripted.Call(workspace.NotebookEditName, `{"path":"pi.ipynb","edit_mode":"insert","cell_type":"markdown","new_source":"# π"}`)),
		scripted.Reply("The notebook prints math.pi under a title."),
	), agent.WithToolsets(ws))
	if err != nil {
		panic(err)
	}
	out, err := coder.Invoke(context.Background(), agent.Ask("Print pi exactly, and give the notebook a title."))
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		if m.Role == model.RoleTool {
			fmt.Printf("%s:\n%s\n", m.ToolName, m.Text())
		}
	}
	content, err := os.ReadFile(filepath.Join(dir, "pi.ipynb"))
	if err != nil {
		panic(err)
	}
	fmt.Print(string(content))
	// Output:
	// read_file:
	// Notebook "pi.ipynb": nbformat 4.4, 1 cell.
	//
	// [cell 0] code, execution_count 1
	//      1	print(3.14)
	//   [output: stdout]
	//   | 3.14
	// notebook_edit:
	// Replaced the source of code cell 0 of "pi.ipynb"; its outputs and execution count were cleared, as they no longer match it.
	// notebook_edit:
	// Inserted markdown cell 0 into "pi.ipynb", at the start; it has 2 cells now, and the cells after the new one are numbered one higher than before.
	// {
	//  "cells": [
	//   {
	//    "cell_type": "markdown",
	//    "metadata": {},
	//    "source": [
	//     "# π"
	//    ]
	//   },
	//   {
	//    "cell_type": "code",
	//    "execution_count": null,
	//    "metadata": {},
	//    "outputs": [],
	//    "source": [
	//     "import math\n",
	//     "print(math.pi)"
	//    ]
	//   }
	//  ],
	//  "metadata": {},
	//  "nbformat": 4,
	//  "nbformat_minor": 4
	// }
}
