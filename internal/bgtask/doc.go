// Package bgtask holds the background tasks of the command toolsets (the
// shell's and the Docker sandbox's): starting a command in the background
// and keeping it under an ID a model reads (task-1, task-2, ...), and the
// task_output and task_stop tools that read and stop it. A toolset gives a
// Manager a Runner, which starts its commands its own way (a process
// group on the host, an exec in a container), and the texts and reports
// that are its own.
package bgtask
