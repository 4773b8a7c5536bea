package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCustomMiddlewareRuns(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	s := out.String()

	// Results come in call order, each under its own call ID.
	assert.Contains(t, s, "  call_1 success: A-100: shipped", "arguments were rewritten")
	assert.Contains(t, s, "  call_2 success: B-200: shipped")
	assert.Contains(t, s, `  call_3 denied: {"error":"approval_required"`)
	assert.Contains(t, s, `  call_4 failed: unknown tool "cancel_order"`)
	assert.Contains(t, s, `  call_5 failed: tool "lookup_order" may be called at most 2 times in this conversation`,
		"the budget is shared across turns")
	assert.Less(t, strings.Index(s, "call_1 success"), strings.Index(s, "call_4 failed"))
	assert.Less(t, strings.Index(s, "turn 2"), strings.Index(s, "call_5 failed"))

	// ToolEnd events come in call order too.
	var ends []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, "event: ") {
			ends = append(ends, strings.Fields(line)[1])
		}
	}
	assert.Equal(t, []string{"call_1", "call_2", "call_3", "call_4", "call_5"}, ends)

	// The audit middleware, outermost, saw every call's final outcome.
	assert.Contains(t, s, "  call_3 refund_order -> denied (approval_required)")
	assert.Contains(t, s, "  call_4 cancel_order -> failed (unknown_tool)")
	assert.Contains(t, s, "  call_5 lookup_order -> failed (budget_exhausted)")
}

func TestRunsAreIndependent(t *testing.T) {
	var out1, out2 bytes.Buffer
	require.NoError(t, run(context.Background(), &out1))
	require.NoError(t, run(context.Background(), &out2))
	assert.Equal(t, out1.String(), out2.String(), "each run builds its own budget: runs do not affect each other")
}
