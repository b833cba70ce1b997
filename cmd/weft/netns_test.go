//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Network namespace helpers for tests that run weft processes on networks
// the test builds (mdns_test.go, nat_e2e_test.go). Every namespace a test
// makes is named weft-<kind>-<pid>[-<role>], <pid> being the test process,
// so a later run can tell leftovers of a killed run (their process is
// gone) from namespaces of a run still going, and remove only those.

// requireNetns skips the test, saying why, unless it runs as root with
// ip (iproute2) and every other tool named on the PATH.
func requireNetns(t *testing.T, tools ...string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("network namespaces are Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s to build the test network (apt-get install %s)", tool, aptPackage(tool))
		}
	}
}

// aptPackage names the Debian package that provides tool.
func aptPackage(tool string) string {
	if tool == "ip" {
		return "iproute2"
	}
	return tool
}

// ipRun runs `ip args...` and returns its output in the error.
func ipRun(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nsRun runs a command inside namespace ns and returns its output in the
// error.
func nsRun(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("in %s: %s: %v: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsName is the name of this process's namespace of kind with role
// (role may be empty).
func netnsName(kind, role string) string {
	name := fmt.Sprintf("weft-%s-%d", kind, os.Getpid())
	if role != "" {
		name += "-" + role
	}
	return name
}

// addNetns creates namespace name with its loopback up and deletes it
// when the test ends. Deleting a namespace destroys the interfaces in it
// (veth pairs, bridges), so one deletion per namespace cleans up
// everything built inside. It skips the test if namespaces cannot be
// made here at all (a container without CAP_SYS_ADMIN).
func addNetns(t *testing.T, name string) {
	t.Helper()
	if err := ipRun("netns", "add", name); err != nil {
		t.Skipf("cannot create a network namespace here: %v", err)
	}
	t.Cleanup(func() {
		if err := ipRun("netns", "delete", name); err != nil {
			t.Errorf("removing namespace: %v", err)
		}
	})
	if err := ipRun("-n", name, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
}

// removeStaleNetns deletes namespaces of kind left by test processes that
// no longer run (a run killed before its cleanups), after ending the
// processes still inside them, which such a run started.
func removeStaleNetns(t *testing.T, kind string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	prefix := "weft-" + kind + "-"
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		name := f[0]
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, prefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if pids, err := exec.Command("ip", "netns", "pids", name).Output(); err == nil {
			for _, p := range strings.Fields(string(pids)) {
				if n, err := strconv.Atoi(p); err == nil {
					killProcess(n)
				}
			}
		}
		if err := ipRun("netns", "delete", name); err != nil {
			t.Logf("stale namespace %s: %v", name, err)
		} else {
			t.Logf("removed stale namespace %s of test process %d", name, pid)
		}
	}
}
