package skill_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/skill"
)

// openWithin opens dir, failing the test when Open has not returned
// shortly before the test's deadline (go test -timeout): a scan that does
// not end fails the test that started it, by name, while a loaded machine
// gets the time the run allows rather than a guess of how fast it is
// (a scan of 20,000 entries through links took 27 s under -race on two
// busy cores).
func openWithin(t *testing.T, dir string, opts ...skill.Option) (*skill.Repository, error) {
	t.Helper()
	var limit <-chan time.Time // none without a deadline (-timeout 0)
	if dl, ok := t.Deadline(); ok {
		timer := time.NewTimer(time.Until(dl) - deadlineMargin)
		defer timer.Stop()
		limit = timer.C
	}
	type opened struct {
		r   *skill.Repository
		err error
	}
	done := make(chan opened, 1)
	go func() {
		r, err := skill.Open(dir, opts...)
		done <- opened{r, err}
	}()
	select {
	case o := <-done:
		if o.r != nil {
			t.Cleanup(func() { _ = o.r.Close() })
		}
		return o.r, o.err
	case <-limit:
		t.Fatal("Open is still scanning as the test's deadline nears")
		return nil, nil
	}
}

// deadlineMargin is the time openWithin leaves before the test's deadline
// to report a scan that did not end.
const deadlineMargin = 5 * time.Second

// Links to "." make a root of one directory look like a tree of 5^16
// directories to a scan 16 levels deep: a link back to a directory on the
// way is passed by.
func TestTheScanPassesByLinksThatLoop(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{"group/a/SKILL.md": skillMD("a", "A skill.", "Body.")})
	for i := range 5 {
		link(t, dir, fmt.Sprintf("l%d", i), ".")
		link(t, dir, fmt.Sprintf("group/up%d", i), "..")
	}
	r, err := openWithin(t, dir, skill.WithMaxDepth(16))
	require.NoError(t, err, "no skill is found twice")
	assert.Equal(t, []string{"a"}, r.Names())
	assert.Empty(t, r.Problems())
}

// Links that do not loop can still multiply the paths to a directory: the
// scan gives up after a bounded number of entries, and says so.
func TestTheScanOfLinkedDirectoriesIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("looks at 20,000 entries through links: seconds (-short)")
	}
	dir := t.TempDir()
	put(t, dir, map[string]string{"a/SKILL.md": skillMD("a", "A skill.", "Body.")})
	// d0 to d15, each with five links to the next: 5^15 paths to d15.
	for d := range 15 {
		for i := range 5 {
			link(t, dir, fmt.Sprintf("d%d/l%d", d, i), fmt.Sprintf("../d%d", d+1))
		}
	}
	put(t, dir, map[string]string{"d15/empty/.keep": ""})
	r, err := openWithin(t, dir, skill.WithMaxDepth(16), skill.WithSkipInvalid())
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, r.Names())
	require.Len(t, r.Problems(), 1)
	assert.ErrorIs(t, r.Problems()[0], skill.ErrInvalidSkill)
	assert.Contains(t, r.Problems()[0].Error(), "the scan stopped here")
	assert.Contains(t, r.Problems()[0].Error(), "WithMaxDepth")
}
