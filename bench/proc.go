package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procUsage is what /proc says about one process.
type procUsage struct {
	CPUSeconds float64 // user + system, all threads
	PeakRSS    int64   // bytes (VmHWM)
	RSS        int64   // bytes resident now (VmRSS)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// readProc reads a process's CPU time from /proc/PID/stat and its peak
// resident set size (and the current one) from /proc/PID/status.
func readProc(pid int) (procUsage, error) {
	var u procUsage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("reading /proc/%d/stat: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	u.CPUSeconds = float64(ut+st) / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("reading /proc/%d/status: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &u.PeakRSS
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &u.RSS
		default:
			continue
		}
		fs := strings.Fields(line)
		if len(fs) >= 2 {
			kb, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil {
				return u, fmt.Errorf("/proc/%d/status: %q", pid, line)
			}
			*dst = kb << 10
		}
	}
	return u, nil
}
