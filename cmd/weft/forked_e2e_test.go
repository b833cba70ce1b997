package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// TestForkedOwnLogSaysSo forks a device's own log the way the authoring
// gate cannot prevent (docs/sync.md, "This device's own log": the member
// it hears from after a restore lacks the tail another member holds):
// A's home is restored from a copy older than an entry B holds, A starts
// while only C (which lacks that entry) is reachable, and writes, reusing
// the sequence number. Once B is back, B refuses A's next entry and tells
// A why: A's folder is in state error with code own-log-forked, and doctor
// names the problem (exit 3). Before, A showed in-sync while B refused
// every entry it wrote. The documented fix, a new identity (the home moved
// aside, joined again into the same folder) and the old one revoked,
// brings all three back in sync.
func TestForkedOwnLogSaysSo(t *testing.T) {
	a, b, c := newDevice(t, "a"), newDevice(t, "b"), newDevice(t, "c")
	// Fixed ports, so that devices restarted while apart find each other
	// at the addresses their peers remember.
	for _, d := range []*device{a, b, c} {
		d.upArgs = []string{"--mdns=false", "--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))}
	}
	b.must("init", b.folder) // B is the admin, who can invite A again at the end
	b.up()
	for _, d := range []*device{a, c} {
		lines := strings.Split(strings.TrimSpace(b.must("invite")), "\n")
		d.must("join", lines[len(lines)-1], d.folder)
		d.up()
	}
	a.write("one.txt", []byte("one"))
	a.must("scan")
	waitHolding(t, a, b, map[string]string{"one.txt": "one"})
	waitHolding(t, a, c, map[string]string{"one.txt": "one"})
	waitInSync(t, a, b, c)

	// C goes away holding A's log up to here; A's home is copied.
	c.stop()
	a.stop()
	backup := filepath.Join(t.TempDir(), "home-backup")
	copyTree(t, a.home, backup)
	// A writes an entry only B receives.
	a.up()
	a.write("two.txt", []byte("two, held by B only"))
	a.must("scan")
	waitHolding(t, a, b, map[string]string{"two.txt": "two, held by B only"})
	b.stop()
	a.stop()

	// A's home restored from the copy: A hears C, which lacks the entry
	// B holds, and reuses its sequence number.
	if err := os.RemoveAll(a.home); err != nil {
		t.Fatal(err)
	}
	copyTree(t, backup, a.home)
	c.up()
	a.up()
	a.write("three.txt", []byte("three, on the restored history"))
	waitHolding(t, a, c, map[string]string{"three.txt": "three, on the restored history"})
	if f := a.status().Folders[0]; f.State == "error" {
		t.Fatalf("a is in error before anything refused it: %+v", f.Errors)
	}

	// B is back; A's next entry does not chain onto what B holds of A.
	b.up()
	a.write("four.txt", []byte("four, refused by B"))
	a.must("scan")
	waitStatus(t, a, time.Minute, func(st api.Status) error {
		f := st.Folders[0]
		for _, e := range f.Errors {
			if e.Code == "own-log-forked" && f.State == "error" && e.Since != nil {
				return nil
			}
		}
		return fmt.Errorf("state %s, errors %+v", f.State, f.Errors)
	})
	if code, out, _ := a.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "own-log-forked"`) {
		t.Fatalf("doctor on a: exit %d, output:\n%s\nwant exit 3 naming own-log-forked", code, out)
	}
	if l := logOf(t, a); !strings.Contains(l, "the log forked") {
		t.Errorf("a did not log the fork:\n%s", a.logTail())
	}

	// The fix doctor gives: a new identity, joined into the same folder
	// with an invite from the admin, and the old identity revoked (so that
	// B and C stop disagreeing about its log).
	old := a.status().Device
	a.stop()
	if err := os.Rename(a.home, a.home+".forked"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.must("invite")), "\n")
	if _, err := a.run("join", lines[len(lines)-1], a.folder); err != nil {
		t.Fatalf("joining again into the same folder: %v", err)
	}
	a.up()
	b.must("revoke", old)
	want := map[string]string{"one.txt": "one", "two.txt": "two, held by B only",
		"three.txt": "three, on the restored history", "four.txt": "four, refused by B"}
	waitHolding(t, a, b, want)
	waitHolding(t, a, c, want)
	waitInSync(t, a, b, c)
	if f := a.status().Folders[0]; len(f.Errors) != 0 {
		t.Errorf("a as a new device still reports errors: %+v", f.Errors)
	}
}
