//go:build unix

package bench

import (
	"fmt"
	"syscall"
)

// errUnsupported is nil where the benchmarks can run: they signal agent
// processes by pid and read free disk space with statfs, both Unix calls.
var errUnsupported error

// terminate asks the process pid to stop (SIGTERM), as a user's service
// manager would; the agent then shuts down cleanly.
func terminate(pid int) { _ = syscall.Kill(pid, syscall.SIGTERM) }

// killPID ends the process pid at once (SIGKILL).
func killPID(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// diskFree returns the bytes an unprivileged writer may still use on
// dir's filesystem, creating dir first.
func diskFree(dir string) (int64, error) {
	if err := mkdirAll(dir); err != nil {
		return 0, err
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, fmt.Errorf("free disk of %s: %w", dir, err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}
