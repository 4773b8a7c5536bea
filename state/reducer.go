package state

import (
	"fmt"
	"reflect"
	"strings"
)

// Change is one task's write to a field during a superstep: the value the
// task was given (Before) and the value it returned (After).
type Change[T any] struct {
	// Node is the name of the node that wrote the field.
	Node string
	// Before is the field's value in the task's input.
	Before T
	// After is the field's value in the task's output.
	After T
}

// Reducer merges the writes that several tasks of one superstep made to a
// field. current is the field's value before the superstep; changes lists
// the tasks that changed the field, in node order (never completion order).
//
// A reducer must not modify current or the values in changes: they may be
// shared with other tasks. It returns a fresh value.
//
// Reducers run when more than one task writes a field in a superstep, and
// for every write made by a task started through a Send (whose input is not
// the graph's state). A single node's write is taken as the field's new
// value: the node returned the whole state it wanted.
type Reducer[T any] func(current T, changes []Change[T]) (T, error)

// ConflictError reports writes to one field by several tasks of a superstep
// where the field's reducer accepts only one.
type ConflictError struct {
	// Field is the name of the field written.
	Field string
	// Nodes are the nodes that wrote it, in node order.
	Nodes []string
}

// Error returns the error's message.
func (e *ConflictError) Error() string {
	field := e.Field
	if field == "" {
		field = "(unnamed)"
	}
	return fmt.Sprintf("field %s written by %d nodes in one superstep (%s); a field without a reducer takes one write per superstep: give it a reducer or let one node write it",
		field, len(e.Nodes), strings.Join(quoteAll(e.Nodes), ", "))
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

func nodesOf[T any](changes []Change[T]) []string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.Node
	}
	return names
}

// Replace is the default reducer: a single write replaces the value; two or
// more writes in one superstep are a *ConflictError naming the nodes.
func Replace[T any]() Reducer[T] {
	return func(current T, changes []Change[T]) (T, error) {
		switch len(changes) {
		case 0:
			return current, nil
		case 1:
			return changes[0].After, nil
		}
		return current, &ConflictError{Nodes: nodesOf(changes)}
	}
}

// LastWrite keeps the write of the last task in node order. Use it for
// fields where any one of several concurrent values will do.
func LastWrite[T any]() Reducer[T] {
	return func(current T, changes []Change[T]) (T, error) {
		if len(changes) == 0 {
			return current, nil
		}
		return changes[len(changes)-1].After, nil
	}
}

// Append concatenates what each task appended to a slice, in node order.
// A task's appended elements are those past the length of its input. A task
// that shortened the slice is an error: with Append, tasks only add.
func Append[E any]() Reducer[[]E] {
	return func(current []E, changes []Change[[]E]) ([]E, error) {
		n := len(current)
		for _, c := range changes {
			if len(c.After) < len(c.Before) {
				return current, fmt.Errorf("node %q shortened an append-only slice from %d to %d elements", c.Node, len(c.Before), len(c.After))
			}
			n += len(c.After) - len(c.Before)
		}
		out := make([]E, 0, n)
		out = append(out, current...)
		for _, c := range changes {
			out = append(out, c.After[len(c.Before):]...)
		}
		return out, nil
	}
}

// MergeMap merges maps key by key: keys a task added or changed are set,
// keys it deleted are deleted, in node order (a later task wins on a key
// both changed). Keys a task left as it found them are not touched.
func MergeMap[K comparable, V any]() Reducer[map[K]V] {
	return func(current map[K]V, changes []Change[map[K]V]) (map[K]V, error) {
		out := make(map[K]V, len(current))
		for k, v := range current {
			out[k] = v
		}
		for _, c := range changes {
			for k := range c.Before {
				if _, ok := c.After[k]; !ok {
					delete(out, k)
				}
			}
			for k, v := range c.After {
				if bv, ok := c.Before[k]; ok && equal(bv, v) {
					continue
				}
				out[k] = v
			}
		}
		return out, nil
	}
}

// Number is the set of types Sum adds.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// Sum adds what each task added to a number: current + Σ (After − Before).
func Sum[N Number]() Reducer[N] {
	return func(current N, changes []Change[N]) (N, error) {
		for _, c := range changes {
			current += c.After - c.Before
		}
		return current, nil
	}
}

// Keyer is an element with an identity. Messages implement it with their ID.
type Keyer interface {
	Key() string
}

// Keyed merges slices of identified elements, such as a conversation's
// messages, in node order:
//   - an element whose key the task's input did not hold is appended, or
//     replaces the element with the same key if another task added it first;
//   - an element whose key the input held, but which the task changed,
//     replaces the element with that key where it stands (an upsert);
//   - an element the input held and the task's output lacks is removed;
//   - an element with an empty key is appended when the task added it: one
//     equal to an element of the task's input without a key (passed
//     through, as a system prompt without an ID is) is not added again.
//     Elements without a key cannot be replaced or removed.
func Keyed[E Keyer]() Reducer[[]E] {
	return func(current []E, changes []Change[[]E]) ([]E, error) {
		out := make([]E, len(current), len(current)+len(changes))
		copy(out, current)
		pos := make(map[string]int, len(out)) // live elements by key
		for i, e := range out {
			if k := e.Key(); k != "" {
				pos[k] = i
			}
		}
		var dead map[int]bool
		for _, c := range changes {
			before := make(map[string]int, len(c.Before))
			var shared map[string]bool // keys several of the input's elements have
			var unkeyed []int          // the input's elements without a key, in order
			for i, e := range c.Before {
				k := e.Key()
				if k == "" {
					unkeyed = append(unkeyed, i)
					continue
				}
				if _, dup := before[k]; dup {
					if shared == nil {
						shared = make(map[string]bool)
					}
					shared[k] = true
				}
				before[k] = i
			}
			// unchanged reports whether e, whose key k the input held, equals
			// one of the input's elements with that key.
			unchanged := func(k string, e E) bool {
				if !shared[k] {
					return equal(c.Before[before[k]], e)
				}
				for _, b := range c.Before {
					if b.Key() == k && equal(b, e) {
						return true
					}
				}
				return false
			}
			used := make([]bool, len(unkeyed))
			next := 0 // the first unused of unkeyed: outputs usually keep the input's order
			passedThrough := func(e E) bool {
				for j := next; j < len(unkeyed); j++ {
					if !used[j] && equal(c.Before[unkeyed[j]], e) {
						used[j] = true
						for next < len(used) && used[next] {
							next++
						}
						return true
					}
				}
				return false
			}
			kept := make(map[string]bool, len(c.After))
			for _, e := range c.After {
				k := e.Key()
				if k == "" {
					if !passedThrough(e) {
						out = append(out, e)
					}
					continue
				}
				kept[k] = true
				if _, ok := before[k]; ok && unchanged(k, e) {
					continue
				}
				if i, ok := pos[k]; ok {
					out[i] = e
					continue
				}
				pos[k] = len(out)
				out = append(out, e)
			}
			for k := range before {
				if kept[k] {
					continue
				}
				if i, ok := pos[k]; ok {
					if dead == nil {
						dead = make(map[int]bool)
					}
					dead[i] = true
					delete(pos, k)
				}
			}
		}
		if len(dead) == 0 {
			return out, nil
		}
		live := make([]E, 0, len(out)-len(dead))
		for i, e := range out {
			if !dead[i] {
				live = append(live, e)
			}
		}
		return live, nil
	}
}

// Fold merges writes with a plain function: starting from the current value,
// it folds each task's returned value into the result in node order.
// f sees whole values, not what each task added; for accumulating fields use
// Append, Sum or MergeMap, which see each task's difference.
func Fold[T any](f func(acc, value T) T) Reducer[T] {
	return func(current T, changes []Change[T]) (T, error) {
		for _, c := range changes {
			current = f(current, c.After)
		}
		return current, nil
	}
}

func equal[T any](a, b T) bool {
	return reflect.DeepEqual(a, b)
}
