// Package callctx holds the context of one tool call and the storage it
// lives in, for package tool and for the packages that run calls through
// it (the executors, the ToolsNode's batch storage, the MCP server and
// broker), without making any of it public.
//
// A Context is what a tool's ctx is while package tool runs its call: the
// call's ID, the room for a typed tool's result part, the marks that say
// its arguments are final and its permission was checked, and, for the
// few calls that report progress or have options of their own, package
// tool's extension. A Frame is the storage of one Context; the zero Frame
// is ready to use, and an executor allocates the frames of a whole batch
// at once (NewFrames). A frame serves a single call, ever, since the
// context that holds it may outlive the call: Serve hands out a new frame
// for one that served already.
//
// Package tool's operations on frames (invoking a call in a frame,
// preparing its arguments in one) take types of package tool, which sits
// above this package; tool registers them when it is initialized
// (Register), and the packages above tool reach them through OpsOf.
package callctx
