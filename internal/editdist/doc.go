// Package editdist measures how far apart two names are, for the "did you
// mean" suggestions of the graph builder and the tool resolver.
package editdist
