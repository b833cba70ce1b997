package node

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
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
		if got := isDiskFull(c.err); got != c.want {
			t.Errorf("isDiskFull(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Every failed apply gets a stable code in status, chosen by its cause.
func TestApplyErrorCode(t *testing.T) {
	for reason, want := range map[string]string{
		"writing a.txt: write /f/.weft-tmp-1: no space left on device": api.CodeFolderDiskFull,
		"open /f/a.txt: read-only file system":                         api.CodeReadOnly,
		"open /f/a.txt: permission denied":                             api.CodePermission,
		errChunkMissing.Error() + ": bafy...":                          api.CodeChunkUnavailable,
		"a.txt changed locally since last scan":                        api.CodeLocalEdit,
		"something else":                                               api.CodeApplyFailed,
	} {
		if got := applyErrorCode(reason); got != want {
			t.Errorf("applyErrorCode(%q) = %q, want %q", reason, got, want)
		}
	}
}

// TestHomeGuard: the first fault is kept until cleared, the full flag
// follows it, and probes for room come at most every homeProbeEvery.
func TestHomeGuard(t *testing.T) {
	var g homeGuard
	t0 := time.Unix(1_800_000_000, 0)
	if _, ok := g.current(); ok || g.full.Load() {
		t.Fatal("a new guard holds a fault")
	}
	if _, due := g.probeDue(t0); due {
		t.Fatal("a probe is due with no fault")
	}
	first := homeFault{op: "storing a peer's entry", message: "full", since: t0, probed: t0}
	if was, now := g.set(first); was.op != "" || now != first {
		t.Fatalf("set: was %+v, now %+v", was, now)
	}
	if was, now := g.set(homeFault{op: "recording local changes", since: t0.Add(time.Second)}); was != first || now != first {
		t.Fatalf("a second fault replaced the first: was %+v, now %+v", was, now)
	}
	if f, ok := g.current(); !ok || f != first || !g.full.Load() {
		t.Fatalf("current: %+v %v, full %v", f, ok, g.full.Load())
	}
	if _, due := g.probeDue(t0.Add(homeProbeEvery - time.Nanosecond)); due {
		t.Fatal("a probe before homeProbeEvery")
	}
	if _, due := g.probeDue(t0.Add(homeProbeEvery)); !due {
		t.Fatal("no probe after homeProbeEvery")
	}
	if _, due := g.probeDue(t0.Add(homeProbeEvery + time.Second)); due {
		t.Fatal("a probe again right after one")
	}
	if was, _ := g.set(homeFault{}); was.op != first.op {
		t.Fatalf("clearing: was %+v", was)
	}
	if _, ok := g.current(); ok || g.full.Load() {
		t.Fatal("a cleared guard still holds a fault")
	}
}
