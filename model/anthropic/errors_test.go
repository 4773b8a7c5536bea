package anthropic_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

// Gateways in front of the API may send the error as a string; its text is
// the message, not the whole body.
func TestGatewayErrorAsString(t *testing.T) {
	for _, mode := range []string{"generate", "stream"} {
		t.Run(mode, func(t *testing.T) {
			s := newServer(t, sequence(
				jsonReply(503, `{"error":"Model is overloaded"}`, "retry-after", "3"),
				jsonReply(400, `{"error":"Prompt is too long"}`),
			))
			m, w := newModel(t, s)
			var err error
			if mode == "generate" {
				_, err = m.Generate(context.Background(), userReq("x"))
			} else {
				_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
			}
			var pe *model.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, 400, pe.StatusCode)
			assert.Equal(t, "Prompt is too long", pe.Message)
			assert.Equal(t, "anthropic: 400 Bad Request: Prompt is too long", pe.Error())
			assert.Equal(t, []time.Duration{3 * time.Second}, w.All(), "the 503 was retried after its Retry-After")
		})
	}
}
