package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `weft join` while the device's agent already runs (for another folder):
// the agent starts syncing the new folder at once, with no restart, and
// `weft init` of a further folder is picked up the same way.
func TestJoinWhileAgentRuns(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder)
	a.write("notes/hello.txt", []byte("from a"))
	a.up()
	b.must("init", filepath.Join(filepath.Dir(b.home), "own"))
	b.up()

	out := a.must("invite")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	out = b.must("join", lines[len(lines)-1], b.folder)
	if !strings.Contains(out, "running agent is syncing it") {
		t.Fatalf("join with a running agent said %q, want it to say the agent syncs it now", out)
	}
	waitSame(t, a, b, 60*time.Second, func(m map[string]string) error {
		if m["notes/hello.txt"] != "file:from a" {
			return errString("notes/hello.txt not there yet")
		}
		return nil
	})
	b.write("notes/reply.txt", []byte("from b"))
	waitSame(t, a, b, 60*time.Second, func(m map[string]string) error {
		if m["notes/reply.txt"] != "file:from b" {
			return errString("notes/reply.txt not there yet")
		}
		return nil
	})
	if n := len(b.status().Folders); n != 2 {
		t.Errorf("b's status lists %d folders, want 2", n)
	}

	third := filepath.Join(filepath.Dir(b.home), "third")
	if out := b.must("init", third); !strings.Contains(out, "running agent is syncing it") {
		t.Errorf("init with a running agent said %q", out)
	}
	if n := len(b.status().Folders); n != 3 {
		t.Errorf("after init, b's status lists %d folders, want 3", n)
	}

	// With no agent running, join says the next `weft up` syncs it.
	b.stop()
	c := newDevice(t, "c")
	out = a.must("invite")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if out := c.must("join", lines[len(lines)-1], c.folder); !strings.Contains(out, "next `weft up`") {
		t.Errorf("join with no agent said %q", out)
	}
	if _, err := os.Stat(c.folder); err != nil {
		t.Error(err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
