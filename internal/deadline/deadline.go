package deadline

import (
	"context"
	"time"
)

// Passed reports whether ctx has a deadline and it is behind us. A context
// says so itself (ctx.Err) only once its timer has fired, which on a busy
// machine can come well after the deadline.
func Passed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
