//go:build !unix

package bench

import (
	"fmt"
	"runtime"
)

// errUnsupported says why Run refuses to start here: the benchmarks stop
// agents with SIGTERM and measure free disk and fsyncs (statfs, strace),
// which only Unix systems have. The rest of weft runs on this OS; only
// `weft bench` does not.
var errUnsupported = fmt.Errorf("bench: not supported on %s (the benchmarks signal agents with SIGTERM and read free disk space with statfs, which need Linux or macOS)", runtime.GOOS)

// terminate is never reached here: Run returns errUnsupported first.
func terminate(pid int) {}

// killPID is never reached here: Run returns errUnsupported first.
func killPID(pid int) {}

// diskFree is never reached here: Run returns errUnsupported first.
func diskFree(dir string) (int64, error) { return 0, errUnsupported }
