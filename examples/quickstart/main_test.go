package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuickstartRuns(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	s := out.String()
	assert.Contains(t, s, "flowchart TD")
	assert.Contains(t, s, "style asks for clearly")
	assert.Contains(t, s, `final draft after 2 revisions: "Graphs are clearly useful. Here are examples."`)

	// The reviewers of a round run in the same superstep. (Whether the
	// second starts before the first finishes depends on how soon the
	// machine gives it a CPU; the engine's tests check that the tasks of a
	// superstep run concurrently.)
	lines := strings.Split(s, "\n")
	for _, step := range []string{"1", "3", "5"} {
		style := indexOf(lines, "step "+step+"  ▶ style")
		facts := indexOf(lines, "step "+step+"  ▶ facts")
		require.True(t, style >= 0 && facts >= 0, "step %s:\n%s", step, s)
		assert.Equal(t, 2, strings.Count(s, "step "+step+"  ✓ "), "both reviewers finish in step %s", step)
	}
	assert.NotContains(t, s, "step 6")

	// Their reviews merge in node order (style, then facts), whichever
	// finished first.
	assert.Contains(t, s, "reviews: style: asks for clearly; facts: asks for examples; style: approves; facts: asks for examples; style: approves; facts: approves\n")
}

func TestQuickstartStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := run(ctx, &bytes.Buffer{})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), err)
}

func indexOf(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}
