// Command a2a runs two agents that talk over the Agent2Agent protocol (A2A)
// in one process. A researcher — a ReAct agent with a lookup tool over the
// team's notes — is served with a2a.NewServer on 127.0.0.1. A supervisor
// reads its agent card, makes a tool of it with a2a.NewTool (the tool's
// name and description come from the card), and delegates to it as to a
// local worker; a writer agent in the same process is the other worker.
//
// The example prints the card the client read (the server's port, which
// changes from run to run, shown as <port>), then the live trace: the
// remote call appears as one tool call with the researcher's status updates
// ("Calling lookup."), sent over the A2A stream, while the local writer's
// own model calls appear nested under it. The final answer ends the trace,
// followed by the HTTP requests the researcher's server answered — the
// card, then one SendStreamingMessage.
//
// It runs offline on scripted models. With OPENAI_API_KEY set (and
// optionally OPENAI_BASE_URL and OPENAI_MODEL) or ANTHROPIC_API_KEY set
// (and optionally ANTHROPIC_BASE_URL and ANTHROPIC_MODEL) all three agents,
// on both sides of the connection, run on that provider's model, and an
// argument replaces the question. OPENAI_BASE_URL alone selects an
// OpenAI-compatible server that needs no key, such as Ollama;
// TRELLIS_PROVIDER (openai, anthropic, gemini or scripted) chooses when several
// are set:
//
//	go run ./examples/a2a
//	ANTHROPIC_API_KEY=... go run ./examples/a2a "Write a note on the Go gopher."
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 go run ./examples/a2a
package main
