// Command supervisor runs a small multi-agent system and prints its live
// trace: a supervisor delegates to a researcher and a writer, each an agent
// with tools of its own. The supervisor's first turn sends the research and a
// request for a title at the same time (two handoffs in one batch, run in
// parallel); its second hands the facts and the title to the writer; it then
// answers with the writer's paragraph. Every tool call — the handoffs too —
// goes through a parallel executor with cache, timeout, circuit-breaker and
// retry middleware.
//
//	go run ./examples/supervisor
//
// It runs offline on scripted models. With OPENAI_API_KEY set (and optionally
// OPENAI_BASE_URL and OPENAI_MODEL) or ANTHROPIC_API_KEY set (and optionally
// ANTHROPIC_BASE_URL and ANTHROPIC_MODEL) the same system runs on that
// provider's model, and an argument replaces the question. OPENAI_BASE_URL
// alone selects an OpenAI-compatible server that needs no key, such as
// Ollama; TRELLIS_PROVIDER (openai, anthropic, gemini or scripted) chooses when
// several are set:
//
//	OPENAI_API_KEY=... go run ./examples/supervisor "Explain Go channels to a newcomer."
//	OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 go run ./examples/supervisor
//
// With TRELLIS_OTEL_STDOUT=1 it also prints the run's OpenTelemetry spans and
// metrics, as JSON, to standard error:
//
//	TRELLIS_OTEL_STDOUT=1 go run ./examples/supervisor 2>spans.json
package main
