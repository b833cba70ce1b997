package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// These tests damage a stopped device's own state the ways issue 14 found
// it broken: the tail of its log lost, its home restored from an older
// copy of itself, its membership log garbled. The device must not fork its
// own log, must get back what it lost from its peer, and must record the
// user's offline edits once that is done.

// vaultDBDir is the database directory of d's only vault.
func vaultDBDir(t *testing.T, d *device) string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(d.home, "*", "*", "*", "member", "members.log"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("%s: want one vault database under %s, got %v (%v)", d.name, d.home, ms, err)
	}
	return filepath.Dir(filepath.Dir(ms[0]))
}

// copyTree copies the directory tree src to dst (which must not exist),
// keeping modes; it is how a backup of a home is taken and put back.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(to, info.Mode().Perm())
		case e.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		}
		return fmt.Errorf("%s: unexpected file type %s", p, e.Type())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitHolding waits until a's and b's folders are the same and hold want
// (path -> content), with no conflict copy anywhere.
func waitHolding(t *testing.T, a, b *device, want map[string]string) {
	t.Helper()
	waitSame(t, a, b, 2*time.Minute, func(m map[string]string) error {
		for p, c := range want {
			if m[p] != "file:"+c {
				return fmt.Errorf("%s is %q, want %q", p, m[p], c)
			}
		}
		for p := range m {
			if strings.Contains(p, ".conflict-") {
				return fmt.Errorf("conflict copy %s", p)
			}
		}
		return nil
	})
}

// logOf is the whole log of d's agents so far.
func logOf(t *testing.T, d *device) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(d.home), d.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkNoFork fails if either device refused an entry of the other or
// saw its own log forked.
func checkNoFork(t *testing.T, ds ...*device) {
	t.Helper()
	for _, d := range ds {
		l := logOf(t, d)
		for _, bad := range []string{"refused an invalid entry", "the log forked", "own-log-forked"} {
			if strings.Contains(l, bad) {
				t.Errorf("%s logged %q:\n%s", d.name, bad, d.logTail())
			}
		}
	}
}

// A device whose last log segment lost its tail, edited offline, takes
// its own entries back from its peer before it writes, so its edit gets
// sequence numbers nobody holds: it reaches the peer and nobody forks.
func TestLostLogTailTakenBack(t *testing.T) {
	a, b := pair(t)
	b.up()
	want := map[string]string{}
	for i := range 4 {
		p := fmt.Sprintf("b%d.txt", i)
		want[p] = fmt.Sprintf("written on b, round %d", i)
		b.write(p, []byte(want[p]))
		waitHolding(t, a, b, want) // one entry per round, each held by a
	}
	waitInSync(t, a, b)
	b.stop()

	segs, err := filepath.Glob(filepath.Join(vaultDBDir(t, b), "log", "*.seg"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segments: %v", err)
	}
	last := segs[len(segs)-1]
	info, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, info.Size()/2); err != nil {
		t.Fatal(err)
	}
	// Offline: an edit of a file whose entry was cut off, and a new file.
	want["b3.txt"] = "edited on b while stopped"
	want["offline.txt"] = "new on b while stopped"
	b.write("b3.txt", []byte(want["b3.txt"]))
	b.write("offline.txt", []byte(want["offline.txt"]))

	b.up()
	waitHolding(t, a, b, want)
	waitInSync(t, a, b)
	checkNoFork(t, a, b)
	if l := logOf(t, b); !strings.Contains(l, "took back this device's own log tail") {
		t.Errorf("b did not log taking its log tail back:\n%s", b.logTail())
	}
}

// A device whose home is restored from an older copy of itself (its log
// shorter than what its peer holds of it, and nothing on its disk to say
// so) learns from the peer's vector that it is behind itself, takes its
// entries back, and records the edit made meanwhile on top of them: no
// fork, no conflict with itself, no restart, no folder left "scanning".
func TestRestoredHomeConverges(t *testing.T) {
	a, b := pair(t)
	b.up()
	want := map[string]string{"one.txt": "one, first version"}
	b.write("one.txt", []byte(want["one.txt"]))
	waitHolding(t, a, b, want)
	waitInSync(t, a, b)
	b.stop()
	backup := filepath.Join(t.TempDir(), "home-backup")
	copyTree(t, b.home, backup)

	b.up()
	want["one.txt"] = "one, second version"
	want["two.txt"] = "two, written after the backup"
	b.write("one.txt", []byte(want["one.txt"]))
	b.write("two.txt", []byte(want["two.txt"]))
	waitHolding(t, a, b, want)
	waitInSync(t, a, b)
	b.stop()

	if err := os.RemoveAll(b.home); err != nil {
		t.Fatal(err)
	}
	copyTree(t, backup, b.home)
	want["one.txt"] = "one, edited after the restore"
	want["two.txt"] = "two, edited after the restore"
	want["three.txt"] = "three, new after the restore"
	for _, p := range []string{"one.txt", "two.txt", "three.txt"} {
		b.write(p, []byte(want[p]))
	}

	b.up()
	waitHolding(t, a, b, want)
	waitInSync(t, a, b) // in-sync: not left scanning, nothing pending, a holds everything
	checkNoFork(t, a, b)
	if l := logOf(t, b); !strings.Contains(l, "took back this device's own log tail") {
		t.Errorf("b did not log taking its log tail back:\n%s", b.logTail())
	}

	// The same restore with no edit: b takes its log back, finds its
	// folder holding its own latest versions, records nothing, and ends
	// in sync without a restart.
	written := b.status().Folders[0].Written
	b.stop()
	if err := os.RemoveAll(b.home); err != nil {
		t.Fatal(err)
	}
	copyTree(t, backup, b.home)
	b.up()
	waitInSync(t, a, b)
	waitHolding(t, a, b, want)
	if got := b.status().Folders[0].Written; got != written {
		t.Errorf("b wrote %d entries after a restore with no edit, want %d (none new)", got, written)
	}
	checkNoFork(t, a, b)
}

// Bytes flipped in a device's membership log lose the records they hit and
// every one after: the device knows no member. It says so, fetches the
// records again from the peer it remembers, checks them from the genesis,
// and syncs again.
func TestDamagedMembershipRefetched(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	// Fixed ports: both restart below, and must find each other again.
	for _, d := range []*device{a, b} {
		d.upArgs = []string{"--mdns=false", "--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))}
	}
	a.must("init", a.folder)
	a.up()
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.must("join", lines[len(lines)-1], b.folder)
	b.up()
	want := map[string]string{"before.txt": "before the damage"}
	a.write("before.txt", []byte(want["before.txt"]))
	waitHolding(t, a, b, want)
	waitInSync(t, a, b)
	b.stop()

	path := filepath.Join(vaultDBDir(t, b), "member", "members.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 64 {
		t.Fatalf("membership log of %d bytes", len(data))
	}
	for i := 16; i < 24; i++ { // inside the genesis record
		data[i] ^= 0xa5
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	want["while-b-was-down.txt"] = "written on a while b was stopped"
	a.write("while-b-was-down.txt", []byte(want["while-b-was-down.txt"]))

	// With no member reachable, b says what is wrong: an error with code
	// membership-lost, and doctor a problem (before: in-sync, nothing).
	a.stop()
	b.up()
	waitStatus(t, b, time.Minute, func(st api.Status) error {
		f := st.Folders[0]
		for _, e := range f.Errors {
			if e.Code == "membership-lost" && f.State == "error" {
				return nil
			}
		}
		return fmt.Errorf("state %s, errors %+v", f.State, f.Errors)
	})
	if code, out, _ := b.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "membership-lost"`) {
		t.Fatalf("doctor on b: exit %d, output:\n%s\nwant exit 3 naming membership-lost", code, out)
	}
	a.up()
	waitHolding(t, a, b, want)
	want["after.txt"] = "written on b after the refetch"
	b.write("after.txt", []byte(want["after.txt"]))
	waitHolding(t, a, b, want)
	waitInSync(t, a, b)
	l := logOf(t, b)
	for _, line := range []string{"membership log damaged", "membership log fetched again from a peer"} {
		if !strings.Contains(l, line) {
			t.Errorf("b did not log %q:\n%s", line, b.logTail())
		}
	}
	checkNoFork(t, a, b)

	// The rewritten log opens clean: a restart reports no damage and
	// syncs at once.
	b.stop()
	b.up()
	waitStatus(t, b, time.Minute, func(st api.Status) error {
		for _, e := range st.Folders[0].Errors {
			if e.Code == "membership-lost" {
				return fmt.Errorf("membership still lost after a restart")
			}
		}
		return nil
	})
	if l2 := logOf(t, b)[len(l):]; strings.Contains(l2, "membership log damaged") {
		t.Errorf("the membership log was still damaged after the refetch:\n%s", b.logTail())
	}
	want["last.txt"] = "written on a after b's restart"
	a.write("last.txt", []byte(want["last.txt"]))
	waitHolding(t, a, b, want)
}
