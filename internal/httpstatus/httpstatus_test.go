package httpstatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTransient(t *testing.T) {
	for _, code := range []int{408, 429, 500, 502, 503, 529} {
		assert.True(t, Transient(code), code)
	}
	for _, code := range []int{200, 301, 400, 401, 403, 404, 409, 422} {
		assert.False(t, Transient(code), code)
	}
}
