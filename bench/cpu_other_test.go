//go:build !unix

package bench

import "time"

// processCPU reports that the platform gives no CPU time.
func processCPU() (time.Duration, bool) { return 0, false }
