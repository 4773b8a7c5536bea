// Package agent assembles prebuilt agent graphs from the nodes of package
// nodes: a ReAct agent (a model that calls tools in a loop until it answers),
// a supervisor that delegates to worker agents through handoff tools, and a
// swarm whose agents pass control to each other.
//
// The graphs are ordinary compiled graphs: run them with Invoke or Stream,
// checkpoint them, nest them as subgraphs, or hand them to a handoff tool.
package agent
