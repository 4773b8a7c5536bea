// Package taskreg keeps the background tasks of a command toolset (the
// shell's and the Docker sandbox's): their IDs as a model reads them
// (task-1, task-2, ...), the finished ones still kept, and what a model is
// told when it names a task that is not kept.
package taskreg
