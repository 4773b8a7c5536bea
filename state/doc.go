// Package state holds what a graph's state is made of beyond plain Go values:
// the reducers that merge the writes of parallel nodes into one field, and the
// checkpoint vocabulary (Checkpoint, PendingWrite, Saver, Serializer) that
// durable runs are built on, with the serializers that encode checkpoints:
// JSON, and Encrypted and EncryptedKeys, which seal each payload with
// AES-GCM bound to its thread, namespace, checkpoint and task
// (BoundSerializer) and rotate keys.
//
// Checkpoint stores live in sub-packages: state/memory for tests and
// short-lived processes, state/sqlite as the embedded default, and
// state/postgres for services whose replicas share threads. Importing this
// package compiles none of them.
package state
