package tool

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMutableToolset(t *testing.T) {
	ctx := context.Background()
	closed := 0
	web := &closer{Toolset: NewStatic("web", named("search")), closed: &closed}
	files := &closer{Toolset: NewStatic("files", named("read"), named("write")), closed: &closed}
	m, err := NewMutable("user", web)
	require.NoError(t, err)
	l, err := Resolve(ctx, []Toolset{m})
	require.NoError(t, err)
	assert.Equal(t, []string{"search"}, l.Names())

	require.NoError(t, m.Add(files))
	l, err = Resolve(ctx, []Toolset{m})
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "read", "write"}, l.Names(), "a later run sees the new member")

	err = m.Add(NewStatic("files", named("other")))
	assert.ErrorContains(t, err, `toolset "user" already has a member named "files"`)
	assert.ErrorIs(t, m.Add(nil), ErrInvalidTool)
	assert.Len(t, m.Toolsets(), 2, "a refused Add adds nothing")

	require.NoError(t, m.Add(NewStatic("more", named("read"))))
	_, err = Resolve(ctx, []Toolset{m})
	var dup *DuplicateToolError
	require.ErrorAs(t, err, &dup)
	assert.Equal(t, "files", dup.First)
	assert.Equal(t, "more", dup.Second)

	removed := m.Remove("more", "nothing")
	require.Len(t, removed, 1)
	assert.Equal(t, "more", removed[0].Name())

	replaced, err := m.Set(files, NewStatic("code", named("run")))
	require.NoError(t, err)
	assert.Equal(t, []Toolset{web}, replaced, "the member that left is handed back to be closed")
	l, err = Resolve(ctx, []Toolset{m})
	require.NoError(t, err)
	assert.Equal(t, []string{"read", "write", "run"}, l.Names())
	_, err = m.Set(files, files)
	assert.Error(t, err, "two members with one name")
	assert.Len(t, m.Toolsets(), 2)

	require.NoError(t, m.Close())
	assert.Equal(t, 1, closed, "Close closes the members")
	assert.Empty(t, m.Toolsets())
}

// Runs resolve a mutable toolset while it changes: each sees a consistent
// member list (run with -race).
func TestMutableToolsetUnderConcurrentChange(t *testing.T) {
	ctx := context.Background()
	m, err := NewMutable("live", NewStatic("a", named("a1"), named("a2")))
	require.NoError(t, err)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = m.Add(NewStatic("b", named("b1")))
			m.Remove("b")
		}
	}()
	for range 2000 {
		l, err := Resolve(ctx, []Toolset{m})
		require.NoError(t, err)
		names := l.Names()
		if len(names) != 2 && len(names) != 3 {
			t.Fatalf("resolved %v", names)
		}
	}
	close(stop)
	wg.Wait()
}
