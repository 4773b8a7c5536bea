//go:build !unix

package cputime

import "time"

// Self reports that the platform gives no CPU time.
func Self() (time.Duration, bool) { return 0, false }
