// Package server serves graphs over the LangGraph Server API (LangChain's
// Agent Protocol and the LangGraph Platform endpoints), so that the
// clients written for it — the JS and Python SDKs
// (@langchain/langgraph-sdk, langgraph-sdk), the useStream React hook, chat
// front ends — work unchanged against a Go service.
//
// A Server is an http.Handler over a runs.Manager: the graphs registered
// with the Manager are the assistants, the Manager's threads are the
// threads, and its runs are the runs. Runs are executed by the Managers
// that call Work on the Manager's database, so any replica serves any
// thread, and a stream is served from the database, so it can be joined or
// resumed (Last-Event-ID) on any replica. For one process with no
// durability — development, tests, single-process tools — runs/memory
// is the whole backend, with no database at all and runs queued in the
// process; runs/sqlite and runs/postgres are for runs that outlive it:
//
//	m, err := memory.Open(ctx)
//	g, err := builder.Compile(graph.WithCheckpointer(m.Saver()))
//	err = m.Register(runs.Graph(g))
//	go m.Work(ctx)
//	srv, err := server.New(m, server.WithAuth(bearer))
//	http.ListenAndServe(addr, srv)
//
// # What it serves
//
// Assistants (each registered graph under its name, and those given with
// WithAssistant): get, search, count, schemas (JSON Schemas of the state),
// graph (nodes and edges, and Mermaid). Threads: create (if_exists), get,
// search by metadata and status, count, update metadata, delete, copy,
// state (latest or at a checkpoint), state update (as a node, from a
// checkpoint), history (before a checkpoint, by source and step). Runs, on a
// thread or stateless: create in the background, stream, wait, join,
// join-stream, cancel (interrupt or rollback), cancel many, list, get,
// delete, batch; multitask_strategy (reject, enqueue, interrupt, rollback),
// on_disconnect (cancel, continue), after_seconds, checkpoint_id (the run
// continues from a fork of that checkpoint), command.resume (the answer to
// the thread's single interrupt, or answers by interrupt ID). Crons, on
// the Manager's schedules. Stream modes: values, updates, messages (the
// reply so far, then complete messages), messages-tuple (token chunks with
// their metadata), custom, events, debug; stream_subgraphs adds the events
// of subgraphs and agents as "mode|namespace". The store endpoints (put,
// get, delete, search by filter or by meaning, list namespaces) serve the
// store.Store given with WithStore, each owner's items apart; without one
// they answer 501.
//
// # Differences from the reference server
//
// The state is a Go value: its "messages" field is shown as LangChain
// messages and read in any of the message forms clients send (see
// messages.go), the other fields as their JSON. Input is a partial state
// written through the fields' reducers. Assistants are configured in code;
// interrupt_before/after are compiled into the graph; command.goto and
// webhooks are refused with 422. A run that paused for input has status
// "success" and its thread "interrupted", a cancelled run "interrupted",
// as in the reference server.
//
// # Owners
//
// WithAuth authenticates each request and names its owner; threads, runs,
// their events and crons are scoped to the owner (runs.WithOwner). See the
// examples for a bearer token and for client certificates.
//
// # The dev page
//
// WithDevPage serves, at a path of the caller's choosing, a page for
// development: the graph drawn, threads and runs live, supersteps, tokens
// and tool calls as a run streams, the state at every checkpoint, forks,
// and interrupts answered from a form. It is off unless asked for.
//
// See docs/server.md.
package server
