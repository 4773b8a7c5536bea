// Package artifact keeps the files a run produces — reports, images,
// tables — as named, versioned artifacts, out of the conversation until
// the model asks for one. Tools and applications save them; the model
// lists them and loads one into the conversation when it needs it, rather
// than carrying every file in every prompt.
//
//	store, err := artifact.NewDir("/var/lib/app/artifacts") // or artifact.NewMemory()
//	...
//	tools, err := artifact.Tools(store) // list_artifacts, load_artifact, save_artifact
//	...
//	a, err := agent.NewReAct(m, agent.WithToolsets(tools, mine), agent.WithCheckpointer(saver))
//	ctx = artifact.WithStore(artifact.WithUser(ctx, userID), store)
//	out, err := a.Invoke(ctx, agent.Ask("..."), graph.WithThread(threadID))
//
// and in a tool of the application's:
//
//	v, err := artifact.SaveFromTool(ctx, "chart.png", artifact.Artifact{Data: png, MediaType: "image/png"})
//
// # Scopes
//
// A Store keeps artifacts by Scope: an application (App), a user (User)
// and a thread, the conversation (Thread). A scope with an empty Thread is
// the user's own, shared by all their threads. Every Store method takes
// the scope of the caller and resolves the name against it (Scope.For): a
// name that starts with "user:" (UserPrefix) refers to the user's scope,
// any other name to the scope given. So within a thread "report.csv" is
// the thread's and "user:profile.png" the user's; List shows both kinds,
// exactly what Load can reach. A run without a thread works in the user's
// scope, where every name is shared by the user's threadless runs.
//
// ScopeFromContext derives the scope of a run from its context: the
// thread of the graph run (graph.ThreadID, which a run has when it is
// given graph.WithThread, with or without a checkpointer), or else one set
// with WithThread; the user and app set with WithUser and WithApp. The
// tools and SaveFromTool use it.
//
// # Names, sizes and types
//
// Names are 1 to MaxNameLength bytes of UTF-8 without '/', '\', "..",
// control characters or spaces at the ends (CheckName); artifacts have no
// folders. A store refuses data larger than WithMaxSize (DefaultMaxSize)
// and metadata larger than MaxMetadataSize, with errors that match
// ErrTooLarge, and metadata that is not UTF-8 or a media type longer than
// 1024 bytes, with errors that match ErrInvalidArtifact. An empty media type is filled in from the name's extension
// or else from the data's first bytes.
//
// # Versions
//
// Each Save of a name adds a version, numbered from 1; Load takes a
// version or 0 for the latest, Versions lists them, Delete removes the
// artifact with every version. Versions are never changed once saved.
//
// # Stores
//
// Memory keeps artifacts in the process. Dir keeps them in files under a
// root directory, which it never leaves (see Dir for the layout): writes
// are atomic, and processes sharing the directory never get the same
// version number. Both are safe for concurrent use. Another store (a
// database, an object store) implements Store and calls Prepare to keep
// the rules of this package.
//
// # What the model sees
//
// load_artifact shows text as text and JSON as JSON, both cut at
// WithMaxTextSize; PNG, JPEG, GIF and WebP images as image parts (not
// every provider takes images in tool results: WithoutImages describes
// them instead); and anything else as a one-line description, never raw
// bytes. Metadata is the application's and never shown.
package artifact
