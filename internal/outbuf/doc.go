// Package outbuf holds the output buffers of the command tools: the head
// and tail of a foreground command's output, and the incrementally read
// tail of a background task's, both bounded and cut between characters.
package outbuf
