// Package scripted provides a language model that plays a script.
//
// A scripted Model answers each call with the next Step of its script: a
// fixed reply (Reply, ReplyJSON, CallTools, Respond), a reply computed from
// the request (Func), or an error (Fail). It never touches the network, its
// replies and tool-call IDs are deterministic, and it records every request it
// receives, which makes it the model of choice for tests and for examples that
// run offline. Its Stream cuts replies into word-sized text chunks and
// fragmented, interleaved tool-call deltas, so code that consumes streams is
// exercised the way real providers exercise it.
//
// Give each agent of a multi-agent system its own Model to script the agents
// independently.
package scripted
