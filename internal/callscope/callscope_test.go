package callscope_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/internal/callscope"
	"github.com/trellis-go/trellis/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// scopeKey is a key of a package that does not import tool.
type scopeKey struct{}

func (scopeKey) ScopeOfCall(callID string, slot *atomic.Value) any {
	if v := slot.Load(); v != nil {
		return v
	}
	slot.Store("scope of " + callID)
	return slot.Load()
}

var _ callscope.Key = scopeKey{}

// TestTheInnermostCallAnswersAKey checks that a tool call's context
// answers a key with the method, per call, and that outside a call nothing
// does.
func TestTheInnermostCallAnswersAKey(t *testing.T) {
	assert.Nil(t, context.Background().Value(scopeKey{}))
	outer := tool.WithCallID(context.Background(), "a")
	assert.Equal(t, "scope of a", outer.Value(scopeKey{}))
	inner := tool.WithCallID(outer, "b")
	assert.Equal(t, "scope of b", inner.Value(scopeKey{}), "the innermost call answers")
	assert.Equal(t, "scope of a", outer.Value(scopeKey{}), "each call keeps its own slot")
}
