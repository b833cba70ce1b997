package homefull

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"time"
)

// A full disk is recognised through the error chain and, where a library
// drops the errno (goleveldb keeps only the text), by the message; other
// errors are not taken for one.
func TestIsDiskFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{syscall.ENOSPC, true},
		{fmt.Errorf("committing scan: %w", &fs.PathError{Op: "write", Path: "/h/000001.log", Err: syscall.ENOSPC}), true},
		{errors.New("leveldb/journal: write /h/000001.log: no space left on device"), true},
		{errors.New("disk quota exceeded"), true},
		{syscall.EIO, false},
		{errors.New("entry: bad signature"), false},
	} {
		if got := IsDiskFull(c.err); got != c.want {
			t.Errorf("IsDiskFull(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestHomeGuard: the first fault is kept until cleared, the full flag
// follows it, and probes for room come at most every ProbeEvery.
func TestHomeGuard(t *testing.T) {
	var g Guard
	t0 := time.Unix(1_800_000_000, 0)
	if _, ok := g.Current(); ok || g.Full() {
		t.Fatal("a new guard holds a fault")
	}
	if _, due := g.ProbeDue(t0); due {
		t.Fatal("a probe is due with no fault")
	}
	first := Fault{Op: "storing a peer's entry", Message: "full", Since: t0, Probed: t0}
	if was, now := g.Set(first); was.Op != "" || now != first {
		t.Fatalf("set: was %+v, now %+v", was, now)
	}
	if was, now := g.Set(Fault{Op: "recording local changes", Since: t0.Add(time.Second)}); was != first || now != first {
		t.Fatalf("a second fault replaced the first: was %+v, now %+v", was, now)
	}
	if f, ok := g.Current(); !ok || f != first || !g.Full() {
		t.Fatalf("current: %+v %v, full %v", f, ok, g.Full())
	}
	if _, due := g.ProbeDue(t0.Add(ProbeEvery - time.Nanosecond)); due {
		t.Fatal("a probe before ProbeEvery")
	}
	if _, due := g.ProbeDue(t0.Add(ProbeEvery)); !due {
		t.Fatal("no probe after ProbeEvery")
	}
	if _, due := g.ProbeDue(t0.Add(ProbeEvery + time.Second)); due {
		t.Fatal("a probe again right after one")
	}
	if was, _ := g.Set(Fault{}); was.Op != first.Op {
		t.Fatalf("clearing: was %+v", was)
	}
	if _, ok := g.Current(); ok || g.Full() {
		t.Fatal("a cleared guard still holds a fault")
	}
}
