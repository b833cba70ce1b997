//go:build !unix

package entry

import "time"

// cpuTime is unavailable here; benchmarks then omit the CPU-time metrics.
func cpuTime() time.Duration { return 0 }
