package main

import (
	"bytes"
	"context"
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
}
