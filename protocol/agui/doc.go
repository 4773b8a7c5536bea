// Package agui serves Trellis agents to user interfaces over AG-UI, the
// Agent-User Interaction Protocol: a client POSTs a RunAgentInput (the
// conversation, the application's tools and context, answers to earlier
// interrupts) and reads the run as server-sent events.
//
// NewHandler wraps a compiled graph whose state holds a conversation (a
// ReAct agent, a supervisor) in an http.Handler. For each request it runs
// one turn and streams:
//
//   - RUN_STARTED, then RUN_FINISHED or RUN_ERROR at the end;
//   - STEP_STARTED and STEP_FINISHED around the graph's nodes;
//   - the models' replies as text messages token by token, with the ID the
//     message gets in the agent's conversation, their reasoning as
//     reasoning messages, and their tool calls with the arguments as they
//     stream;
//   - TOOL_CALL_RESULT for each call the agent runs, with the result's
//     status, title and (when it succeeded) Details in its metadata;
//   - CUSTOM events for the progress of running calls (ToolProgressEvent)
//     and for what nodes emit themselves (graph.EmitCustom);
//   - STATE_SNAPSHOT of what the application shows of the state, with
//     WithStateSnapshots, and STATE_DELTA patches after the first with
//     WithStateDeltas;
//   - MESSAGES_SNAPSHOT of the conversation as the agent holds it, before
//     the run ends;
//   - the agents that handoff tools run (a supervisor's workers) as
//     subagent invocations (SUBAGENT_STARTED, their events attributed with
//     subagentRunId, SUBAGENT_FINISHED or SUBAGENT_ERROR), for clients of
//     protocol 1.0 and later;
//   - the run's token usage on its last event.
//
// The application's tools (RunInput.Tools) are offered to the model next
// to the agent's own, which win a name. A call of one is not run: the run
// finishes with the calls in RUN_FINISHED's pendingToolCallIds, and the
// client answers with tool messages in its next request. A run that pauses
// for the user (nodes.AskUser, graph.Interrupt) finishes with the
// interrupt outcome; the client answers each interrupt with a resume
// entry, or abandons them all.
//
// Without a checkpointer each request's messages are the whole
// conversation (reasoning included, through the signatures of reasoning
// messages), and the agent's questions are answered through their calls;
// other pauses need a checkpointer. With one, each AG-UI thread is a
// checkpointer thread (ThreadKey) that outlives the process: the handler
// adds the messages the thread lacks, and resumes a thread that waits.
//
// The handler does not authenticate. Authentication goes in front of it
// (a middleware), and WithOwner tells the handler whose request it
// serves: each thread is then its owner's, under a key that holds the
// owner's name, so that a thread ID sent by someone else names a thread
// of theirs and nothing of the first is read or continued, in this
// process or another.
//
// The client side runs agents served over AG-UI: Client.Run streams a
// run's events, and Client.Tool makes a remote agent a tool that a
// supervisor delegates tasks to, conversations and questions included.
//
// Requests the handler cannot run are refused before the stream starts,
// with an HTTP status and a message naming the problem (see
// Handler.ServeHTTP); a run that fails after it started ends with
// RUN_ERROR. What a client is told of errors — a run's, a subagent's, a
// tool call's — is the kind of failure only, never a stack trace or a
// path, unless WithErrorText words errors otherwise. A client that goes
// away, or a stream that can no longer be written, cancels its run.
package agui
