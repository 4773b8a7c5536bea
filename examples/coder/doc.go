// Command coder runs a coding agent on a small Go module whose tests fail.
// The module — a function with an off-by-one bug and a test that catches it
// — is copied into a temporary directory, and the agent works there with
// the tools of package tool/coding (without the web tools): it runs the
// tests with bash (go test ./..., which fails), reads the code, fixes it
// with edit_file, runs the tests again (they pass) and answers. The trace
// shows every model and tool call; a summary of the changes on disk
// follows.
//
// Every destructive call (bash, write_file, edit_file, ...) goes through a
// permission policy (middleware.Permission with a tool.Policy). With a real
// model the policy asks on the terminal — answer y to approve, anything
// else to refuse, and the model is told it was refused. Offline the policy
// approves each call without asking and the trace says what it approved.
// The commands run with a clean environment (no API keys) plus what the go
// command needs, GOTOOLCHAIN=local and GOWORK=off; the module has no
// dependencies, so the go command in PATH is all it needs.
//
// It runs offline on a scripted model, or on a real one when
// OPENAI_API_KEY (or OPENAI_BASE_URL, for a compatible server such as
// Ollama) or ANTHROPIC_API_KEY is set; OPENAI_MODEL and ANTHROPIC_MODEL
// name the model, ANTHROPIC_BASE_URL another endpoint, and
// TRELLIS_PROVIDER (openai, anthropic, gemini or scripted) chooses when several are
// set. With a real model an argument replaces the task.
//
//	go run ./examples/coder
//	ANTHROPIC_API_KEY=... go run ./examples/coder
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5-coder go run ./examples/coder "Make SumTo return 0 for negative n, and test it."
package main
