// Command react runs a ReAct agent: a model that calls tools — here two, in
// parallel — until it can answer. It runs offline on a scripted model, or on
// a real one when OPENAI_API_KEY or ANTHROPIC_API_KEY is set.
//
//	go run ./examples/react
//	go run ./examples/react "What is 17 + 25, and how is the weather in Lisbon?"
package main
