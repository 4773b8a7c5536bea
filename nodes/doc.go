// Package nodes holds the graph nodes that bring models and tools together:
// the LLM node, which calls a model with the conversation and the run's
// tools; the ToolsNode, which runs the model's tool calls through an
// executor and appends the results; and the routing condition between them.
//
// The nodes work on any state that embeds Chat (or whose pointer implements
// HasChat):
//
//	type State struct {
//		nodes.Chat
//		Topic string
//	}
//
//	b := graph.New[State](nodes.MessagesReducer[State]()).
//		AddNode("llm", nodes.LLM[State](m, nodes.WithTools(search))).
//		AddEdge(graph.START, "llm").
//		AddConditionalEdges("llm", nodes.ToolsCondition[State]("tools"), "tools", graph.END)
//	nodes.AddTools[State](b, "tools", "llm", nodes.WithTools(search))
//	g, err := b.Compile()
//
// Options that both nodes take (Option: WithTools, WithToolsets,
// WithResolveOptions, WithStructuredOutput, WithResponseFormat) are given to
// both, so that the ToolsNode runs what the model is offered.
//
// Package agent assembles these into prebuilt agents.
package nodes
