package graph

import (
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/state"
)

// Apply returns base with the named fields of update written to it as a
// write of START, which is how an input given as a partial state (the
// runs layer's, a server's) reaches the state a thread already has: a
// field with a reducer gets the reducer's result for a change from the
// field's zero value to update's value (state.Append and state.Keyed add
// update's elements, state.Sum adds its value, state.MergeMap merges its
// entries); a field without one takes update's value. Fields are named as
// Event.Fields names them: by their Go names, promoted fields of embedded
// structs by their path ("Base.Count"). Fields not named keep base's
// values. An unknown name is an error, and so is a reducer's.
func (g *Graph[S]) Apply(base, update S, fields ...string) (S, error) {
	var zero S
	dst := base
	var problems []string
	for _, name := range fields {
		f := g.fields.byName(name)
		if f == nil {
			problems = append(problems, fmt.Sprintf("%q is not a field of the state", name))
			continue
		}
		if f.merge == nil {
			g.fields.copyField(f, &dst, &update)
			continue
		}
		w := []write[S]{{node: START, in: &zero, out: &update, send: true}}
		if err := f.merge.merge(&dst, &base, w); err != nil {
			var ce *state.ConflictError
			if errors.As(err, &ce) && ce.Field == "" {
				ce.Field = f.name
			}
			return base, fmt.Errorf("graph %q: applying field %s: %w", g.name, f.name, err)
		}
	}
	if len(problems) > 0 {
		return base, fmt.Errorf("graph %q: Apply: %s", g.name, strings.Join(problems, "; "))
	}
	return dst, nil
}

// byName finds a field by the name the engine gives it.
func (ft *fieldTable[S]) byName(name string) *fieldInfo[S] {
	for i := range ft.fields {
		if ft.fields[i].name == name {
			return &ft.fields[i]
		}
	}
	return nil
}
