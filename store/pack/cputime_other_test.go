//go:build !unix

package pack

import "time"

// cpuTime is zero where getrusage does not exist: BenchmarkPut then
// reports a cpu-ms/MB of zero there; its wall time still holds.
func cpuTime() time.Duration { return 0 }
