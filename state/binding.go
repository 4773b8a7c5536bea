package state

import (
	"encoding/binary"
)

// Binding names the place a serialized payload is stored in: the thread,
// namespace and checkpoint it belongs to and, for a pending write, the
// task that wrote it. A BoundSerializer binds its output to it, so that a
// payload read from any other place is refused.
type Binding struct {
	// ThreadID, Namespace and CheckpointID name the checkpoint.
	ThreadID, Namespace, CheckpointID string
	// Write is set for the payload of a pending write of the checkpoint,
	// and TaskID then names its task; both are zero for the checkpoint's
	// own payload.
	Write  bool
	TaskID string
}

// CheckpointBinding returns the binding of cp's own payload.
func CheckpointBinding(cp *Checkpoint) Binding {
	return Binding{ThreadID: cp.ThreadID, Namespace: cp.Namespace, CheckpointID: cp.ID}
}

// WriteBinding returns the binding of the payload of the pending write of
// task taskID against checkpoint cp.
func WriteBinding(cp *Checkpoint, taskID string) Binding {
	return Binding{ThreadID: cp.ThreadID, Namespace: cp.Namespace, CheckpointID: cp.ID, Write: true, TaskID: taskID}
}

// bindingDomain starts every binding's associated data; unboundDomain is
// the associated data of output bound to no place (Serializer's Marshal).
// Each names its version, so that a later encoding never collides.
const (
	bindingDomain = "trellis.state.binding.v1\x00"
	unboundDomain = "trellis.state.unbound.v1\x00"
)

// AssociatedData encodes b without ambiguity, for use as the associated
// data of an AEAD cipher: each field is length-prefixed, so no two
// bindings encode alike (thread "a/b" with namespace "c" differs from
// thread "a" with namespace "b/c").
func (b Binding) AssociatedData() []byte {
	n := len(bindingDomain) + 1 + 4*binary.MaxVarintLen64 + len(b.ThreadID) + len(b.Namespace) + len(b.CheckpointID) + len(b.TaskID)
	out := make([]byte, 0, n)
	out = append(out, bindingDomain...)
	kind := byte('c')
	if b.Write {
		kind = 'w'
	}
	out = append(out, kind)
	for _, f := range [...]string{b.ThreadID, b.Namespace, b.CheckpointID, b.TaskID} {
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// BoundSerializer is a Serializer that can bind its output to the place it
// is stored: what MarshalBound wrote for one Binding, UnmarshalBound reads
// for that Binding only. An encrypting serializer makes the binding part of
// what it authenticates, so that a payload copied into another thread's
// checkpoint, or an older checkpoint's payload put in place of a newer one,
// is refused rather than read as if it belonged there.
//
// The graph engine uses these methods, in place of Marshal and Unmarshal,
// when its serializer has them (graph.WithSerializer), binding each
// checkpoint's payload to its thread, namespace and ID and each pending
// write's to its checkpoint and task. Encrypted's serializers implement it.
type BoundSerializer interface {
	Serializer
	// MarshalBound encodes v for the place at.
	MarshalBound(v any, at Binding) ([]byte, error)
	// UnmarshalBound decodes data into the value v points to, provided
	// that data was produced by MarshalBound for the same place at.
	UnmarshalBound(data []byte, at Binding, v any) error
}
