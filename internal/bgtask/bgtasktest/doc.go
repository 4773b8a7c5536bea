// Package bgtasktest helps tests of toolsets built on internal/bgtask
// (tool/shell, tool/docker) wait for a background task's state instead of
// for a fixed time. It sits beside bgtask because it knows the name of
// bgtask's blocked read.
package bgtasktest
