package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The Linux-only parts of the network namespace helpers (netns_test.go);
// netns_other_test.go stands in for them elsewhere, so that the package's
// tests build (and go vet runs) for every OS weft is released for.

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// killProcess ends the process pid at once (SIGKILL).
func killProcess(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// inNetns runs fn on an OS thread that has entered namespace ns, so the
// sockets fn creates (net.Dial, net.Listen) belong to ns and keep to it
// afterwards, whichever goroutine uses them. The thread is never handed
// back to the scheduler: it exits with the goroutine, so no other
// goroutine ever runs in ns by accident.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // deliberately never unlocked
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- fmt.Errorf("namespace %s: %w", ns, err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering namespace %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
