package arguments

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanDecodeAgreesWithItsHalves decodes arguments the one-pass plan
// takes, arguments only the full pipeline takes (coerced), and arguments
// nothing takes, with Plan.Decode: it gives what Fast, or Check and Value,
// give, and an *Error that lists every problem.
func TestPlanDecodeAgreesWithItsHalves(t *testing.T) {
	p := mustPlan[searchArgs]("")

	var got searchArgs
	require.NoError(t, p.Decode([]byte(`{"query":"a","limit":3,"tags":["x"]}`), &got))
	fast, ok := Fast[searchArgs](p, []byte(`{"query":"a","limit":3,"tags":["x"]}`))
	require.True(t, ok)
	assert.Equal(t, fast, got)

	got = searchArgs{Tags: []string{"left over"}}
	require.NoError(t, p.Decode([]byte(`{"query":"a","limit":"3"}`), &got))
	assert.Equal(t, searchArgs{Query: "a", Limit: 3}, got, "coerced by the full pipeline, into a zeroed value")

	err := p.Decode([]byte(`{"limit":99}`), &got)
	var aerr *Error
	require.True(t, errors.As(err, &aerr))
	assert.Len(t, aerr.Fields, 2, "the missing query and the limit too large")

	assert.Error(t, p.Decode([]byte(`{}`), got), "dst must be a pointer to the plan's type")
}
