// Command react runs a ReAct agent: a model that calls tools — here two, in
// parallel — until it can answer. It runs offline on a scripted model, or on
// a real one when OPENAI_API_KEY (or OPENAI_BASE_URL, for a compatible
// server such as Ollama) or ANTHROPIC_API_KEY is set; OPENAI_MODEL and
// ANTHROPIC_MODEL name the model, ANTHROPIC_BASE_URL another endpoint, and
// TRELLIS_PROVIDER (openai, anthropic, gemini or scripted) chooses when several are
// set. With a real model an argument replaces the question.
//
//	go run ./examples/react
//	OPENAI_API_KEY=... go run ./examples/react "What is 17 + 25, and how is the weather in Lisbon?"
package main
