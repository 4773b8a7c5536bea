// Command agui serves a shop assistant to a web page over AG-UI: the page
// streams the agent's replies and tool calls, and offers the agent a tool
// of its own, add_to_cart, which runs in the page. The agent looks products
// up with its own tool (find_product) and asks the page to add the one it
// chose; the page's cart reaches the model as context.
//
// It runs offline on a scripted model, or on a real one when
// OPENAI_API_KEY (or OPENAI_BASE_URL, for a compatible server such as
// Ollama) or ANTHROPIC_API_KEY is set (see examples/react).
//
//	go run ./examples/agui          # serves http://127.0.0.1:8080
//	go run ./examples/agui -demo    # plays a page's part in the terminal, then exits
//
// The page can also be opened with a first request in its address, for
// example http://127.0.0.1:8080/?ask=I+need+a+lamp (its test opens it so in
// headless Chromium).
//
// With -demo the example starts the server on a free port and acts as the
// page: it sends a request, prints the events it reads, runs add_to_cart
// when the agent calls it, and sends the result back.
package main
