package graph

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"unsafe"

	"github.com/trellis-go/trellis/state"
)

// fieldInfo locates one top-level (or promoted) field of the state. The engine uses it to
// see which fields a task wrote and to merge writes at the barrier.
type fieldInfo[S any] struct {
	name     string
	offset   uintptr
	size     uintptr
	typ      reflect.Type
	kind     reflect.Kind
	pointers bool           // values of the field hold pointers
	merge    fieldBinder[S] // nil: one write per superstep
}

// fieldTable describes the fields of S.
type fieldTable[S any] struct {
	fields []fieldInfo[S]
	slices []int // fields to clip before handing the state to concurrent tasks
	maps   []int // fields to clone before handing the state to any task
}

// fieldBinder merges the writes of several tasks into one field.
type fieldBinder[S any] interface {
	locate() (offset uintptr, typ reflect.Type)
	merge(dst, base *S, ws []write[S]) error
}

// write is one task's output together with the input it was given.
type write[S any] struct {
	node string
	in   *S
	out  *S
	send bool // the task was started by a Send
}

// taskWrite is the write of a task of node that returned out: in is the
// task's own input (a Send's), nil for a task triggered by edges, which
// read base.
func taskWrite[S any](node string, in, base, out *S) write[S] {
	if in != nil {
		return write[S]{node: node, in: in, out: out, send: true}
	}
	return write[S]{node: node, in: base, out: out}
}

// taskInput is the input of a task whose own input is in (a Send's), base
// for a task triggered by edges.
func taskInput[S any](in, base *S) *S {
	if in != nil {
		return in
	}
	return base
}

type binding[S, T any] struct {
	get    func(*S) *T
	reduce state.Reducer[T]
}

func (b *binding[S, T]) locate() (uintptr, reflect.Type) {
	s := new(S)
	p := b.get(s)
	base, fp := uintptr(unsafe.Pointer(s)), uintptr(unsafe.Pointer(p))
	if p == nil || fp < base || fp-base >= max(unsafe.Sizeof(*s), 1) {
		return ^uintptr(0), reflect.TypeFor[T]()
	}
	return fp - base, reflect.TypeFor[T]()
}

func (b *binding[S, T]) merge(dst, base *S, ws []write[S]) (err error) {
	defer func() {
		// The reducer is the application's code.
		if p := recover(); p != nil {
			err = fmt.Errorf("reducer %w", panicError(p, debug.Stack()))
		}
	}()
	changes := make([]state.Change[T], len(ws))
	for i, w := range ws {
		changes[i] = state.Change[T]{Node: w.node, Before: *b.get(w.in), After: *b.get(w.out)}
	}
	v, err := b.reduce(*b.get(base), changes)
	if err != nil {
		return err
	}
	*b.get(dst) = v
	return nil
}

func binderStateType(x any) string {
	t := reflect.TypeOf(x)
	if t == nil {
		return "nil"
	}
	return t.String()
}

// newFieldTable reflects over S and attaches the reducers.
func newFieldTable[S any](binders []fieldBinder[S]) (*fieldTable[S], []string) {
	var problems []string
	t := reflect.TypeFor[S]()
	ft := &fieldTable[S]{}
	if t.Kind() == reflect.Struct {
		ft.addFields(t, 0, "")
	} else if t.Size() > 0 {
		ft.fields = append(ft.fields, fieldInfo[S]{name: "(state)", size: t.Size(), typ: t, kind: t.Kind(), pointers: hasPointers(t)})
	}
	for _, b := range binders {
		off, typ := b.locate()
		found := false
		for i := range ft.fields {
			f := &ft.fields[i]
			if f.offset == off && f.typ == typ {
				if f.merge != nil {
					problems = append(problems, fmt.Sprintf("field %s has two reducers", f.name))
				}
				f.merge = b
				found = true
				break
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("a reducer of %s does not point at a top-level or promoted field of %s", typ, t))
		}
	}
	for i, f := range ft.fields {
		switch f.kind {
		case reflect.Slice:
			ft.slices = append(ft.slices, i)
		case reflect.Map:
			ft.maps = append(ft.maps, i)
		}
	}
	return ft, problems
}

// addFields adds the fields of struct type t found at offset base. The
// fields of embedded structs are added in their place, as the promoted fields
// they are, so that a reducer can name them and parallel writes to two of
// them do not conflict.
func (ft *fieldTable[S]) addFields(t reflect.Type, base uintptr, prefix string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type.Size() == 0 {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			ft.addFields(f.Type, base+f.Offset, prefix+f.Name+".")
			continue
		}
		ft.fields = append(ft.fields, fieldInfo[S]{name: prefix + f.Name, offset: base + f.Offset, size: f.Type.Size(), typ: f.Type, kind: f.Type.Kind(), pointers: hasPointers(f.Type)})
	}
}

func fieldPtr[S any](s *S, f *fieldInfo[S]) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(s), f.offset)
}

// changed reports whether out's field differs from in's. Strings compare by
// content, maps by content, everything else by its bits: a slice that was
// reassigned or appended to, a pointer that points elsewhere.
func (ft *fieldTable[S]) changed(f *fieldInfo[S], in, out *S) bool {
	a, b := fieldPtr(in, f), fieldPtr(out, f)
	switch f.kind {
	case reflect.String:
		return *(*string)(a) != *(*string)(b)
	case reflect.Map:
		va, vb := reflect.NewAt(f.typ, a).Elem(), reflect.NewAt(f.typ, b).Elem()
		if va.UnsafePointer() == vb.UnsafePointer() {
			return false
		}
		if va.IsNil() != vb.IsNil() {
			return true
		}
		return !reflect.DeepEqual(va.Interface(), vb.Interface())
	case reflect.Slice:
		// The same elements: the same array and length. The capacity does
		// not count: a task that runs alongside others gets its slices
		// clipped (see isolated), and returning one as it came is no write.
		ha, hb := (*[3]uintptr)(a), (*[3]uintptr)(b)
		return ha[0] != hb[0] || ha[1] != hb[1]
	}
	return !bytes.Equal(unsafe.Slice((*byte)(a), f.size), unsafe.Slice((*byte)(b), f.size))
}

// adoptUnchanged makes the fields of out that equal in's (reflect.DeepEqual)
// share in's values. A task output read back from a checkpoint holds fresh
// copies of everything; compared by their bits, its slices and pointers
// would all count as written.
func (ft *fieldTable[S]) adoptUnchanged(out, in *S) {
	for i := range ft.fields {
		f := &ft.fields[i]
		if !f.pointers || !ft.changed(f, in, out) {
			continue
		}
		if reflect.DeepEqual(reflect.NewAt(f.typ, fieldPtr(in, f)).Elem().Interface(), reflect.NewAt(f.typ, fieldPtr(out, f)).Elem().Interface()) {
			ft.copyField(f, out, in)
		}
	}
}

// copyField sets dst's field to src's: a plain copy for fields without
// pointers, else through reflect, with the write barriers Go requires.
func (ft *fieldTable[S]) copyField(f *fieldInfo[S], dst, src *S) {
	if !f.pointers {
		copy(unsafe.Slice((*byte)(fieldPtr(dst, f)), f.size), unsafe.Slice((*byte)(fieldPtr(src, f)), f.size))
		return
	}
	reflect.NewAt(f.typ, fieldPtr(dst, f)).Elem().Set(reflect.NewAt(f.typ, fieldPtr(src, f)).Elem())
}

// hasPointers reports whether values of t hold pointers the garbage
// collector must see.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// written returns the names of the fields out changed relative to in.
func (ft *fieldTable[S]) written(in, out S) []string {
	var names []string
	for i := range ft.fields {
		if ft.changed(&ft.fields[i], &in, &out) {
			names = append(names, ft.fields[i].name)
		}
	}
	return names
}

// isolated returns a copy of s prepared for a task: map fields are cloned so
// that a task writing into a map changes only its own, and, for tasks that
// run concurrently (clip), slice fields are clipped to their length so that
// appends never share a backing array. Taking s by value keeps the callers'
// copies on their stacks.
func (ft *fieldTable[S]) isolated(s S, clip bool) S {
	if clip {
		ft.clip(&s)
	}
	if len(ft.maps) > 0 {
		s = ft.withClonedMaps(s)
	}
	return s
}

// clip sets the capacity of every slice field to its length.
func (ft *fieldTable[S]) clip(s *S) {
	for _, i := range ft.slices {
		// A slice header is {data, len, cap}; setting cap to len writes no pointer.
		hdr := (*[3]uintptr)(unsafe.Add(unsafe.Pointer(s), ft.fields[i].offset))
		hdr[2] = hdr[1]
	}
}

func (ft *fieldTable[S]) withClonedMaps(s S) S {
	for _, i := range ft.maps {
		f := &ft.fields[i]
		v := reflect.NewAt(f.typ, fieldPtr(&s, f)).Elem()
		if v.IsNil() {
			continue
		}
		c := reflect.MakeMapWithSize(f.typ, v.Len())
		it := v.MapRange()
		for it.Next() {
			c.SetMapIndex(it.Key(), it.Value())
		}
		v.Set(c)
	}
	return s
}

// merge folds the outputs of a superstep's tasks into base, in task order.
// Each write's in is the input the task was given before isolation (base
// itself for tasks triggered by edges), its out what the task returned.
func (ft *fieldTable[S]) merge(base *S, tasks, scratch []write[S]) (S, error) {
	dst := *base
	ws := scratch
	for fi := range ft.fields {
		f := &ft.fields[fi]
		ws = ws[:0]
		anySend := false
		for _, t := range tasks {
			if ft.changed(f, t.in, t.out) {
				ws = append(ws, t)
				anySend = anySend || t.send
			}
		}
		switch {
		case len(ws) == 0:
			continue
		case f.merge == nil && len(ws) == 1:
			ft.copyField(f, &dst, ws[0].out)
		case f.merge == nil:
			nodes := make([]string, len(ws))
			for i, w := range ws {
				nodes[i] = w.node
			}
			return *base, &state.ConflictError{Field: f.name, Nodes: nodes}
		case len(ws) == 1 && !anySend:
			ft.copyField(f, &dst, ws[0].out)
		default:
			if err := f.merge.merge(&dst, base, ws); err != nil {
				var ce *state.ConflictError
				if errors.As(err, &ce) {
					if ce.Field == "" {
						ce.Field = f.name
					}
					return *base, err
				}
				return *base, fmt.Errorf("merging field %s: %w", f.name, err)
			}
		}
	}
	return dst, nil
}
