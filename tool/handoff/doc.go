// Package handoff makes tools that run a compiled graph as an agent.
//
// A model delegates to the agent by calling its handoff tool with a task and,
// optionally, context the agent needs. The agent's graph runs inside the
// caller's run (see graph.Graph.Nested) and its answer comes back as the tool
// result:
//
//	research, err := handoff.New("researcher", "Finds facts and cites sources.", researcherGraph)
//
// Give the tool to a model-driven graph (an LLM node and a ToolsNode, or a
// prebuilt agent) like any other tool. Package agent builds supervisors from
// handoffs.
//
// # History
//
// By default the agent runs isolated: its conversation holds one user message
// with the context and the task, and it sees its own system prompt, nothing of
// the caller's conversation. WithSharedHistory gives it the caller's
// conversation first (tool.Conversation), without the pending tool calls.
// WithPersistentHistory lets it continue its own conversation instead: each
// call sees the tasks and answers of its earlier calls in the caller's
// thread (one history per key), recorded in the metadata of the caller's
// tool messages (MetaHistory), so that the history is checkpointed, forked
// and replayed with the caller's conversation. WithInputFilter lets a
// function decide what the agent sees (WithoutTools, LastMessages, or
// one's own).
//
// # Routing the caller
//
// A tool of the agent that answers with ToParent ends the agent's loop and
// routes the caller's graph once the handoff returns: graph.END ends the
// caller's turn with the agent's answer, another node name continues the
// caller's graph there (a transfer its ToolsNode declares).
//
// # Result
//
// The tool's result is the text of the agent's last assistant message;
// WithAllMessages returns every message the agent added instead, as JSON.
// Either way the result's Details hold an Output with the messages, for logs
// and user interfaces. An agent whose run fails (an error, a panic, its
// step limit) gives an error result that the calling model reads; the
// caller's run goes on.
//
// # Options
//
// WithRetries runs the agent again, after a growing wait, when its run fails or
// its answer is rejected by the validator set with WithValidator; interrupts
// and cancellation are never retried. WithMaxDepth limits how many handoffs
// may run inside one another (a *DepthError past it). WithEvents chooses which
// of the agent's events reach the caller's stream, where they carry the
// agent's name in their Path.
//
// # Interrupts
//
// An interrupt raised inside the agent (graph.Interrupt in one of its nodes or
// tools) stops the caller's run: the ToolsNode that ran the handoff keeps the
// answers of the batch's other calls and surfaces the interrupt, with the
// agent's name in its Path. When the caller's thread is resumed, the handoff
// runs again and the agent resumes from its checkpoints (in the caller's
// saver, under a namespace made of the tool call's ID and a digest of the
// agent's input) with the resume value, instead of starting over. A call
// whose task was changed in the caller's thread in the meantime (by
// UpdateState, or on a fork from an earlier checkpoint) is a new run: the
// agent starts over on the new task.
//
// # Dynamic agents
//
// NewDynamic makes a tool whose agent the model shapes per call: it gives the
// request, an optional instruction and the tools the agent may use, chosen
// from a set fixed in code; a Template turns them into the graph to run.
//
// # State
//
// A handoff runs graphs over any state whose pointer has the method
// ChatMessages() *[]model.Message, as every state embedding nodes.Chat does.
package handoff
