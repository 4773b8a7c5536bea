// Package a2a connects Trellis agents and the Agent2Agent (A2A) protocol,
// both ways: a remote A2A agent becomes a tool a model delegates to, as it
// delegates to a local agent through a handoff tool, and a Trellis agent
// becomes an A2A agent that other frameworks' clients call.
//
// The package speaks the protocol's JSON-RPC 2.0 binding over HTTP, with
// server-sent events for streams, in protocol version 1.0 and, for agents
// and clients that have not moved on, 0.3. Its data types (Task, Message,
// Part, Artifact, Card, ...) write 1.0 JSON and read either generation.
//
// # Remote agents as tools
//
//	billing, err := a2a.NewTool(ctx, "https://billing.example.com")
//
// NewTool reads the agent's card (CardPath under the base URL) and fails,
// saying why, when it cannot: no card (ErrCardNotFound), not JSON or no
// name (ErrInvalidCard), no JSON-RPC interface (ErrNoJSONRPC), only
// protocol versions this package does not speak (ErrUnsupportedVersion).
// Of the card's JSON-RPC interfaces the client takes the first in 1.x,
// else the first in 0.3; a card's top-level url (a 0.3 field) is spoken to
// in 0.3 whatever its protocolVersion says, and an agent that answers a
// 1.0 method with -32601 (method not found) is spoken to in 0.3 from then
// on, that request included.
// The tool's name and description come from the card (WithName and
// WithDescription override them); its arguments are a task and an optional
// context_id (Args).
//
// A call sends the task as a message and reads the answer: the text of a
// completed task's artifacts (data parts as JSON) or of the agent's
// message. A task the agent failed, rejected or canceled gives an error
// result quoting the agent (CodeTaskFailed). A task that waits for input
// or authentication gives a result that relays the agent's question; the
// next call with the same context_id continues that task. A task still
// working is followed to its end: over the stream when the card says the
// agent streams, reporting its updates as the call's progress
// (tool.ReportProgress), else by polling GetTask with a growing wait. When
// the call's context ends first, the tool cancels the task (once the agent
// has told the task's ID: a call that ends before the first answer cannot
// name it). Results end
// with "[context_id: ...]", so that the model can continue the
// conversation (WithoutContextHint leaves it out); Details hold a Reply.
//
// Requests carry the headers of WithHeader and WithHeaderFunc (credentials,
// per-user tokens) and go through WithHTTPClient's client. A request
// answered with 408, 429 or a 5xx status is sent again, after the wait the
// agent asks for with Retry-After (WithRetries). Answers are read up to
// WithMaxResponseBytes. A stream is bounded by the agent's silence
// (WithStreamIdleTimeout, 5 minutes unless set, the wait for its headers
// included; a tool then follows the task by polling) and by its size
// (WithMaxStreamBytes for the whole stream, WithMaxResponseBytes for one
// event), with errors that name the limit and match model.ErrStreamIdle,
// or ErrResponseTooLarge and model.ErrStreamEventTooLarge or
// model.ErrStreamTooLarge. Errors are classified in the result's ErrorCode:
// CodeUnavailable (with a *StatusError, transient for 408, 429 and 5xx),
// CodeProtocol (a JSON-RPC error, an *RPCError naming its code and
// message, or an answer that cannot be read), CodeRefused.
//
// Client is the protocol client underneath: Card, SendMessage,
// SendStreamingMessage, GetTask, CancelTask, SubscribeToTask.
//
// # Trellis agents as A2A agents
//
//	srv, err := a2a.NewServer("researcher", "Finds facts and cites sources.", researcherGraph)
//	defer srv.Close()
//	http.ListenAndServe(":8080", srv)
//
// NewServer takes a compiled graph over a state with a conversation, as
// handoff.New does. The Server is an http.Handler: it serves the agent's
// card at CardPath and answers JSON-RPC requests posted to it:
// SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask
// and ListTasks, and the 0.3 names message/send, message/stream,
// tasks/get, tasks/cancel and tasks/resubscribe, answering in the
// generation the A2A-Version header names (without the header, the
// generation of the method's name). Errors follow the protocol: -32700 for
// a body that is not JSON, -32600 for a request that is not JSON-RPC,
// -32601 for an unknown method, -32602 for params that are wrong (naming
// what is wrong), -32001 for an unknown task, -32002 for a task that can no
// longer be canceled, -32003 for push notifications, which the server does
// not send, -32004 for messages to finished tasks, -32009 for a protocol
// version it does not speak.
//
// Each message starts a task that runs the agent on the conversation of the
// message's contextId (a new one when the message has none): the same
// contextId continues the same conversation, one task at a time (a task
// of a busy context waits for the one before it, and when the first one
// pauses for input, the waiting one's message answers it). While
// WithMaxTasks tasks run or wait, new messages are refused with HTTP 503,
// which the package's client retries. A task
// completes with the agent's last answer as its artifact "answer", fails
// with the run's error as its status message (WithErrorText to word it),
// or, when the run pauses for input (nodes.AskUser, graph.Interrupt),
// waits for input with the question as its status message. Streams carry
// the task, its status updates (a note for each tool call and, for a task
// started by SendStreamingMessage, whose models then stream, their text as
// it comes, marked MetaDelta) and its artifact, and end when
// the task ends or waits for input; a client that leaves a stream does not
// stop the task. CancelTask cancels a running task's run, and so does a
// client that leaves a blocking SendMessage before the answer (it has not
// learned the task's ID to ask for it later). A cancel either takes effect,
// and the task ends canceled even if the run's answer comes a moment
// later, or comes after the task ended and fails with "task not
// cancelable" (-32002): never both. Close cancels every run and waits for
// them.
//
// Where conversations live depends on the agent. With a checkpointer
// (agent.WithCheckpointer), each context is a thread of it (Server.ThreadID;
// ThreadPrefix + contextId without WithOwner): conversations outlive the server, and paused
// runs are resumed with the next message of their context. Canceling a
// task that waits for input drops its question from the thread (the calls
// left without a result are answered as canceled), so the next message of
// the context starts a new turn instead of answering it. Without one the
// server keeps each conversation in memory (WithMaxContexts bounds each
// owner's, and an owner's new conversations push out only that owner's
// idle ones; WithMaxTotalContexts bounds all owners'), and a run that
// pauses fails its task, since it cannot be resumed.
//
// The server authenticates nobody: wrap it in the HTTP middleware of your
// choice, describe the scheme in the card (WithCard), and name each
// request's owner with WithOwner (middleware sets it with
// ContextWithOwner; RequestOwner reads it). Tasks and conversations then
// belong to their owner: lists, reads, cancels, subscriptions and
// follow-up messages see only the caller's tasks, and another owner's task
// is "task not found" (-32001), as one that does not exist. Without
// WithOwner every request has the same owner: anyone who reaches the
// server can read and cancel every task, and continue any conversation
// whose contextId they know (the server's are random).
package a2a
