// Package toolsearch provides a tool.Selector that asks a model which tools
// are relevant to the run's current request, for agents with more tools
// than a model should be shown at once (the dozens of tools of a few MCP
// servers, say):
//
//	search := toolsearch.New(smallModel, toolsearch.WithMaxTools(6),
//		toolsearch.WithAlwaysInclude("ask_user"))
//	g, err := agent.NewReAct(m, agent.WithToolsets(servers...),
//		agent.WithResolveOptions(tool.SelectWith(search)))
//
// # What the model is asked
//
// Select sends a system message (DefaultSystemPrompt, or WithSystemPrompt's)
// and one user message holding the request, the candidate tools' names and
// descriptions (not their schemas; a long description is cut), and the form
// of the answer: a JSON object {"tools": [...]} with at most WithMaxTools
// names, the most relevant first. The request is the text of the latest
// user message of the conversation the LLM node puts in the context
// (tool.Conversation), plan nudges (nodes.PlanNudge) aside; the few user and
// assistant messages with text before it (WithHistory, two by default) come
// along for context, so that a follow-up is understood. When the model says
// it supports native structured output (model.Describer), or
// WithStructuredOutput says so, the request also carries the answer's
// schema as its response format, the names limited to the candidates'.
//
// The reply is read leniently: JSON in a Markdown fence or after prose,
// almost-JSON that tool.RepairJSON mends, a bare array, entries that are
// objects with a name. Names that are not candidates are ignored, and
// duplicates count once; picks beyond the maximum are dropped.
//
// # What is kept
//
//   - The always-included tools (WithAlwaysInclude) are kept whatever the
//     model answers; they are not shown to the model and do not count
//     against the maximum.
//   - With fewer candidates than WithMinCandidates (by default, when they
//     all fit under the maximum), and when the conversation has no user
//     message with text, every tool is kept and the model is not called.
//   - An answer with an empty list keeps the always-included tools alone:
//     the model judged that the request (a greeting, a question it can
//     answer itself) needs no tool.
//   - When the model fails, or its reply holds no list of names, or names
//     only tools that are not candidates, Select keeps every tool
//     (fail-open, the default) or returns the error (WithFailOpen(false)),
//     which fails the LLM node and so the run. A cancelled run context is
//     an error in both modes; WithTimeout bounds the model call alone.
//
// The tool list the LLM node builds keeps the toolsets' order whatever the
// order of the picks. As with every selector, selection decides what the
// model is offered, not what may run (see tool.SelectWith).
//
// # Cache
//
// An agent resolves its tools on every model call, so one user turn with
// three tool round trips selects four times over the same request. The
// Selector remembers its selections (WithCacheSize, 64 by default, least
// recently used forgotten first) by a digest of everything its model is
// sent, the request, its history and the candidates' names and
// descriptions included: the repeated resolves of a turn, and the same
// request over the same tools in another run, ask the model once. A
// different request, a new message of history, or a change in the
// candidates asks again. Failures are not remembered. Two concurrent
// selections of one request may both ask the model.
//
// The selector's model calls are not part of the run's model events; to
// account for their tokens, pass WithUsage.
package toolsearch
