// Package snapio writes and reads the JSON snapshots of in-process stores:
// a file replaced atomically, and a strict decoder whose errors say what is
// wrong with a snapshot and where.
package snapio
