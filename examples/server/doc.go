// Command server serves the supervisor of examples/supervisor over the
// LangGraph Server API (package server), so that the LangGraph SDKs, the
// useStream React hook and chat front ends that speak that API talk to it
// unchanged. It runs offline: the supervisor and its two workers (a
// researcher with a search tool, a writer with a style guide) play
// scripted models.
//
//	go run ./examples/server                      # on 127.0.0.1:2024, in memory
//	go run ./examples/server -db runs.db          # runs and threads kept in SQLite
//	go run ./examples/server -token secret        # requests need "Authorization: Bearer secret"
//	go run ./examples/server -dev                 # and the dev page at http://127.0.0.1:2024/dev/
//
// Then, from another terminal:
//
//	curl -s localhost:2024/assistants/search -d '{}'
//	curl -s localhost:2024/runs/wait -d '{"assistant_id":"supervisor","input":{"messages":[{"type":"human","content":"Explain goroutines."}]}}'
//	curl -sN localhost:2024/runs/stream -d '{"assistant_id":"supervisor","input":{"messages":"hi"},"stream_mode":["messages-tuple"],"stream_subgraphs":true}'
//
// or with the JS SDK:
//
//	const client = new Client({ apiUrl: "http://localhost:2024" });
//	for await (const part of client.runs.stream(null, "supervisor", { input: { messages: [{ type: "human", content: "hi" }] }, streamMode: "messages-tuple" })) console.log(part);
//
// The offline scripts answer their own question (an explainer of
// goroutines for newcomers) whatever the user asks.
package main
