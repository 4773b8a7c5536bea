package skill_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/skill"
)

// Skills shipped inside a program: an embed.FS works as this MapFS does.
func Example() {
	skills := fstest.MapFS{
		"release-notes/SKILL.md": {Data: []byte(`---
name: release-notes
description: Write release notes from a list of merged changes. Use when asked for a changelog.
---
Group the changes under Added, Changed and Fixed, newest first.
Use template.md as the layout.
`)},
		"release-notes/template.md": {Data: []byte("## Added\n\n## Changed\n\n## Fixed\n")},
	}
	repo, err := skill.FromFS(skills)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer repo.Close()
	set, err := skill.Tools(repo) // give it to an agent: agent.WithToolsets(set)
	if err != nil {
		fmt.Println(err)
		return
	}

	// What the model is told in the system prompt.
	list, _ := set.Tools(context.Background())
	fmt.Println(tool.CollectInstructions(list))
	fmt.Println()

	// What it gets when it loads the skill.
	res := tool.Invoke(context.Background(), list[0], model.ToolCall{
		ID: "c1", Name: skill.LoadName, Arguments: []byte(`{"name":"release-notes"}`),
	})
	fmt.Println(res.Text())
	// Output:
	// Skills are packages of instructions for particular tasks. When a task matches a skill's description, call skill_load with the skill's name before you start, then follow the instructions it returns; skill_read_file reads the files a skill lists.
	//
	// Available skills:
	// - release-notes: Write release notes from a list of merged changes. Use when asked for a changelog.
	//
	// Skill "release-notes" loaded. Its instructions:
	//
	// Group the changes under Added, Changed and Fixed, newest first.
	// Use template.md as the layout.
	//
	// Files of the skill (read one with skill_read_file, name "release-notes" and the path as listed):
	// - template.md (31 bytes)
}
