// Package coding bundles the tools a coding agent works with into one
// toolset: the file tools of package workspace (read_file, list_files,
// grep, write_file, edit_file, notebook_edit), the shell commands and
// background tasks of package shell (bash, task_output, task_stop), and
// the web tools (web_fetch from package webfetch, and web_search from
// package websearch over DuckDuckGo's Instant Answer API), all rooted in
// one directory:
//
//	set, err := coding.New("./project")
//	...
//	defer set.Close()
//	coder, err := agent.NewReAct(m, agent.WithToolsets(set))
//
// The file tools cannot reach outside the directory; the shell starts its
// commands there but is not a sandbox (see package shell), so pair the set
// with a permission policy that asks before destructive calls, or leave
// the shell out with WithoutShell. WithReadOnly leaves out the file tools
// that write (write_file, edit_file, notebook_edit); the shell stays,
// since running tests and builds is what a reviewing agent needs, and a
// command can still change files: add WithoutShell for an agent that must
// change nothing. WithoutWeb leaves the two web tools out.
// WithCommands puts another command set in the shell's place, such as a
// docker.Toolset whose container mounts the directory, so that commands
// run in a sandbox while the file tools work on the same files.
// WithSearch puts another search tool in web_search's place, such as one
// over a backend that lists general web pages:
//
//	searx, err := websearch.NewSearXNG(websearch.WithBaseURL("http://localhost:8888"))
//	...
//	search, err := websearch.New(searx)
//	...
//	set, err := coding.New("./project", coding.WithSearch(search))
//
// Each part keeps its own options (WithWorkspaceOptions, WithShellOptions,
// WithWebFetchOptions, WithSearchOptions, WithSearchBackendOptions), and
// the set's options that concern several parts (WithReadOnly, WithMaxFileSize) are applied after
// them.
package coding
