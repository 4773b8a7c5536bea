// Package runkey holds the context key under which a graph run's context
// answers with the run's metadata, so that packages below graph (tools)
// can read what they need of it, such as the run's thread, without
// importing graph.
package runkey
