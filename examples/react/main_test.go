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

func TestReactExampleRunsOffline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, "question", offline()))
	s := out.String()
	assert.Contains(t, s, `tool  ▶ add {"a": 17, "b": "25"}`)
	assert.Contains(t, s, "tool  ✓ get_weather → Lisbon: 21°C, clear sky")
	assert.Contains(t, s, "answer: 17 + 25 = 42; weather in Lisbon: 21°C, clear sky.")
}
