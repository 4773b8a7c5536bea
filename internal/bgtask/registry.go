package bgtask

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxFinished is how many finished tasks whose final output was not read
// a Registry keeps; beyond it, the oldest is forgotten.
const MaxFinished = 64

// Registry holds tasks of type T by ID. It is not safe for concurrent use:
// the toolset that owns it guards it with its lock.
type Registry[T comparable] struct {
	seq      int
	tasks    map[string]entry[T]
	finished []string // finished tasks still kept, oldest first
}

type entry[T any] struct {
	task T
	n    int
}

// Add keeps t and returns its ID, the next in the sequence.
func (r *Registry[T]) Add(t T) string {
	if r.tasks == nil {
		r.tasks = map[string]entry[T]{}
	}
	r.seq++
	id := "task-" + strconv.Itoa(r.seq)
	r.tasks[id] = entry[T]{task: t, n: r.seq}
	return id
}

// Normalize returns the ID a model meant: the number alone, or with zeros
// in front ("1", "01", "task-01"), names the task it counts.
func Normalize(id string) string {
	id = strings.TrimSpace(id)
	if n, err := strconv.Atoi(strings.TrimPrefix(id, "task-")); err == nil && n >= 0 {
		id = "task-" + strconv.Itoa(n)
	}
	return id
}

// Get returns the task with the ID id (normalized), if it is kept.
func (r *Registry[T]) Get(id string) (T, bool) {
	e, ok := r.tasks[Normalize(id)]
	return e.task, ok
}

// Holds reports whether t is still kept under id.
func (r *Registry[T]) Holds(id string, t T) bool {
	e, ok := r.tasks[id]
	return ok && e.task == t
}

// Finished records that the task id ended; past MaxFinished finished
// tasks, the oldest is forgotten.
func (r *Registry[T]) Finished(id string) {
	r.finished = append(r.finished, id)
	if len(r.finished) > MaxFinished {
		delete(r.tasks, r.finished[0])
		r.finished = slices.Delete(r.finished, 0, 1)
	}
}

// Forget drops the finished task id.
func (r *Registry[T]) Forget(id string) {
	delete(r.tasks, id)
	r.finished = slices.DeleteFunc(r.finished, func(f string) bool { return f == id })
}

// Len returns how many tasks are kept.
func (r *Registry[T]) Len() int { return len(r.tasks) }

// Tasks returns the tasks kept, in the order they were started.
func (r *Registry[T]) Tasks() []T {
	es := make([]entry[T], 0, len(r.tasks))
	for _, e := range r.tasks {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry[T]) int { return a.n - b.n })
	ts := make([]T, len(es))
	for i, e := range es {
		ts[i] = e.task
	}
	return ts
}

// Unknown says why no task id (normalized) is kept, and which tasks are,
// each described by label.
func (r *Registry[T]) Unknown(id string, label func(T) string) string {
	var why string
	if n, err := strconv.Atoi(strings.TrimPrefix(id, "task-")); err == nil && strings.HasPrefix(id, "task-") && n >= 1 && n <= r.seq {
		why = fmt.Sprintf("Task %q has finished and is no longer kept: its final output was already read (or it was the oldest of more than %d finished tasks).", id, MaxFinished)
	} else {
		why = fmt.Sprintf("There is no task %q.", id)
	}
	ts := r.Tasks()
	if len(ts) == 0 {
		return why + " No background tasks are kept now."
	}
	labels := make([]string, len(ts))
	for i, t := range ts {
		labels[i] = label(t)
	}
	return why + " The tasks are: " + strings.Join(labels, ", ") + "."
}
