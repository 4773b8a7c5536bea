package bgtask

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type job struct{ name string }

func TestRegistry(t *testing.T) {
	var r Registry[*job]
	a, b := &job{"a"}, &job{"b"}
	assert.Equal(t, "task-1", r.Add(a))
	assert.Equal(t, "task-2", r.Add(b))
	for _, spelling := range []string{"task-1", "1", "01", "task-01", " task-1 "} {
		got, ok := r.Get(spelling)
		assert.True(t, ok, spelling)
		assert.Same(t, a, got, spelling)
	}
	assert.Equal(t, []*job{a, b}, r.Tasks())
	assert.True(t, r.Holds("task-2", b))
	assert.False(t, r.Holds("task-2", a))

	label := func(j *job) string { return j.name }
	assert.Equal(t, `There is no task "task-7". The tasks are: a, b.`, r.Unknown("task-7", label))
	r.Finished("task-1")
	r.Forget("task-1")
	assert.Equal(t, `Task "task-1" has finished and is no longer kept: its final output was already read (or it was the oldest of more than 64 finished tasks). The tasks are: b.`, r.Unknown("task-1", label))
	r.Forget("task-2")
	assert.Equal(t, `There is no task "x". No background tasks are kept now.`, r.Unknown("x", label))
	assert.Zero(t, r.Len())
}

func TestRegistryForgetsTheOldestFinished(t *testing.T) {
	var r Registry[*job]
	for i := range MaxFinished + 2 {
		id := r.Add(&job{fmt.Sprint(i)})
		r.Finished(id)
	}
	assert.Equal(t, MaxFinished, r.Len())
	_, ok := r.Get("task-1")
	assert.False(t, ok, "the oldest finished task is forgotten")
	_, ok = r.Get("task-2")
	assert.False(t, ok)
	_, ok = r.Get("task-3")
	assert.True(t, ok)
}
