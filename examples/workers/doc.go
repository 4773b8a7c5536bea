// Command workers runs an agent on the runs layer with a producer and two
// worker processes sharing one database: the producer starts runs, any
// worker executes them, and the producer streams and waits for them
// without knowing which worker holds which.
//
//	go run ./examples/workers                                  # SQLite in a temporary file, offline
//	go run ./examples/workers -postgres postgres://127.0.0.1/test
//
// Each role can also run alone, sharing a database with the others:
//
//	go run ./examples/workers -role worker -db runs.db &
//	go run ./examples/workers -role producer -db runs.db -runs 50
//
// The agent's model is an offline stand-in that looks a book up with a
// tool and answers with what it found.
package main
