package gemini_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The SDK's dependencies bring in OpenCensus, whose package init starts a
// worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}
