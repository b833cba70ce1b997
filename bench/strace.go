package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const straceBin = "strace"

// straceRun counts fsync and fdatasync calls of one process (all threads)
// with `strace -f -c`, either launching the process under strace or
// attaching to it. Its timings are never reported.
type straceRun struct {
	out    string
	attach *exec.Cmd
}

func newStraceRun(out string) *straceRun { return &straceRun{out: out} }

func (s *straceRun) launchArgs() []string {
	return []string{"-f", "-c", "-e", "trace=fsync,fdatasync", "-o", s.out}
}

// attachTo starts strace on a running process. stopAttached ends it.
func (s *straceRun) attachTo(pid int) error {
	cmd := exec.Command(straceBin, append(s.launchArgs(), "-p", strconv.Itoa(pid))...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting strace: %w", err)
	}
	s.attach = cmd
	// strace needs a moment to attach to every thread; it prints nothing
	// we can wait for when -o is given, so give it a fixed head start.
	time.Sleep(500 * time.Millisecond)
	return nil
}

func (s *straceRun) stopAttached() {
	if s.attach == nil {
		return
	}
	_ = s.attach.Process.Signal(syscall.SIGINT)
	_ = s.attach.Wait()
	s.attach = nil
}

// count reads the summary strace wrote: the calls of fsync plus fdatasync.
func (s *straceRun) count() (int64, error) {
	b, err := os.ReadFile(s.out)
	if err != nil {
		return 0, fmt.Errorf("reading strace summary: %w", err)
	}
	return parseStraceSummary(string(b))
}

// parseStraceSummary sums the calls column of the fsync and fdatasync rows
// of an `strace -c` table.
func parseStraceSummary(s string) (int64, error) {
	var n int64
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if name := f[len(f)-1]; name != "fsync" && name != "fdatasync" {
			continue
		}
		c, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("strace summary line %q: %w", line, err)
		}
		n += c
	}
	return n, nil
}

// straceWorks reports whether strace is installed and may trace here. With
// install set and running as root, it installs strace with apt-get first.
func straceWorks(install bool) (bool, string) {
	if _, err := exec.LookPath(straceBin); err != nil {
		if !install || os.Geteuid() != 0 {
			return false, "strace not installed"
		}
		if out, err := exec.Command("apt-get", "install", "-y", "-q", "strace").CombinedOutput(); err != nil {
			return false, fmt.Sprintf("apt-get install strace failed: %v: %s", err, lastLine(string(out)))
		}
	}
	if out, err := exec.Command(straceBin, "-f", "-c", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		return false, fmt.Sprintf("strace cannot trace here: %v: %s", err, lastLine(string(out)))
	}
	return true, ""
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return ls[len(ls)-1]
}
