package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// versionsOf reads d's local versions of its one folder.
func versionsOf(t *testing.T, d *device) api.VersionsInfo {
	t.Helper()
	var infos []api.VersionsInfo
	if err := json.Unmarshal([]byte(d.must("folder", "versions", "--json")), &infos); err != nil || len(infos) != 1 {
		t.Fatalf("%s: folder versions --json: %v (%d folders)", d.name, err, len(infos))
	}
	return infos[0]
}

// waitKept waits until d's version store names at least n versions.
func waitKept(t *testing.T, d *device, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if got := versionsOf(t, d).Versions; got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d versions kept after a minute: %+v", d.name, n, versionsOf(t, d))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort returns a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitCurrent waits until the current version of path on d (recorded,
// not only on disk) has the hash want.
func waitCurrent(t *testing.T, d *device, path, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := d.run("history", path, "--json")
		var h api.History
		if err == nil && json.Unmarshal([]byte(out), &h) == nil && len(h.Versions) > 0 && h.Versions[0].Hash == want && h.Versions[0].State == "current" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s's current version is not %s after a minute: %v %s", d.name, path, want, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// versionWith returns the ID and content source of the version of path
// whose hash is that of want.
func versionWith(t *testing.T, d *device, path string, hashOf string) api.HistoryVersion {
	t.Helper()
	for _, v := range history(t, d, path).Versions {
		if v.Hash == hashOf {
			return v
		}
	}
	t.Fatalf("%s: no version of %s with hash %s", d.name, path, hashOf)
	return api.HistoryVersion{}
}

// No relay, two devices: a 1 MiB file overwritten on A and another
// deleted on A come back from the version store on B with A stopped, and
// on A with B stopped. A tiny budget then drops the oldest versions:
// history says none for them, and restore --dry-run promises nothing.
func TestLocalVersionsWithNoRelay(t *testing.T) {
	a, b := pair(t)
	// Both devices restart while the other is down: B listens on a fixed
	// port too, so A finds it again (random ports alone would not meet
	// without mDNS; issue 18).
	b.upArgs = []string{"--mdns=false", "--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))}
	b.up()
	r := rand.New(rand.NewPCG(21, 22))
	keep1, gone := randBytes(r, 1<<20), randBytes(r, 1<<20)
	a.writeAtomic("keep.bin", keep1)
	a.writeAtomic("gone.bin", gone)
	waitSame(t, a, b, 2*time.Minute, filesIn(2))
	waitKept(t, a, 2)
	waitKept(t, b, 2)
	h1 := history(t, a, filepath.Join(a.folder, "keep.bin")).Versions[0].Hash
	hg := history(t, a, filepath.Join(a.folder, "gone.bin")).Versions[0].Hash

	keep2 := randBytes(r, 1<<20)
	a.writeAtomic("keep.bin", keep2)
	if err := os.Remove(filepath.Join(a.folder, "gone.bin")); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, 2*time.Minute, filesIn(1))
	waitKept(t, a, 3)
	h2 := history(t, a, filepath.Join(a.folder, "keep.bin")).Versions[0].Hash

	// restoreAlone restores keep.bin's and gone.bin's first versions on d
	// from its own version store; each restore's output must contain say.
	restoreAlone := func(d *device, say string) {
		t.Helper()
		for _, f := range []struct {
			name, hash string
			want       []byte
		}{{"keep.bin", h1, keep1}, {"gone.bin", hg, gone}} {
			p := filepath.Join(d.folder, f.name)
			v := versionWith(t, d, p, f.hash)
			if v.Content != "versions" {
				t.Fatalf("%s: %s's old version content %q, want versions", d.name, f.name, v.Content)
			}
			if out := d.must("restore", p, "--version", v.ID, "--dry-run"); !strings.Contains(out, "would restore") {
				t.Fatalf("%s: dry run: %q", d.name, out)
			}
			if out := d.must("restore", p, "--version", v.ID); !strings.Contains(out, say) {
				t.Fatalf("%s: restore: %q; want it to say %q", d.name, out, say)
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, f.want) {
				t.Fatalf("%s: %s after the restore is not the old content", d.name, f.name)
			}
		}
	}
	// B alone: its own store holds what A's edit and deletion replaced here.
	a.stop()
	restoreAlone(b, "restored")
	b.stop()

	// A alone: its own store holds what its user replaced and deleted.
	// Having heard from nobody since its start, A writes the content back
	// and records it once it hears from B (docs/sync.md).
	a.up()
	restoreAlone(a, "recorded and sent once")
	b.up()
	waitCurrent(t, a, filepath.Join(a.folder, "keep.bin"), h1)
	waitCurrent(t, a, filepath.Join(a.folder, "gone.bin"), hg)
	waitStatus(t, a, time.Minute, inSync)
	b.stop()

	// A budget of one byte keeps nothing: the overwritten second version
	// of keep.bin is in no local store and no device is connected.
	a.must("folder", "versions", a.folder, "--budget", "1")
	p := filepath.Join(a.folder, "keep.bin")
	v2 := versionWith(t, a, p, h2)
	if v2.Content != "none" {
		ls, _ := os.ReadDir(a.folder)
		var names []string
		for _, e := range ls {
			names = append(names, e.Name())
		}
		t.Fatalf("a: dropped version content %q, want none; folder %v; history %+v; versions %+v", v2.Content, names, history(t, a, p), versionsOf(t, a))
	}
	out := a.must("restore", p, "--version", v2.ID, "--dry-run")
	if strings.Contains(out, "would restore") || !strings.Contains(out, "cannot restore") {
		t.Fatalf("a: dry run of a version nobody holds: %q; want it to say it cannot", out)
	}
	if _, err := a.run("restore", p, "--version", v2.ID); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("a: restoring a version nobody holds: %v, want a clear error", err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, keep1) {
		t.Fatal("a: keep.bin changed after a failed restore")
	}
}

// Bytes flipped in B's version store: `weft scrub` on B finds the damaged
// chunks and drops them, and B fetches them again from A, so the store
// holds as much as before.
func TestVersionStoreScrubRepairs(t *testing.T) {
	a, b := pair(t)
	b.up()
	r := rand.New(rand.NewPCG(31, 32))
	for i := range 4 {
		a.writeAtomic(fmt.Sprintf("f%d.bin", i), randBytes(r, 300<<10))
	}
	waitSame(t, a, b, 2*time.Minute, filesIn(4))
	// A copies its own first versions into its store in the background
	// (the keeper's queue); overwriting a file before that copy is done
	// loses its first version, as a user's save would. On a loaded
	// machine this test failed 3 times in 24 runs (2026-12-07) with A
	// keeping 6 or 7 versions, not 8, and the rest skipped, not failed:
	// content gone before it was read (the budget and the disk had room),
	// as when B has the files before A's keeper has copied them. Wait for
	// the copies first.
	waitKept(t, a, 4)
	for i := range 4 {
		a.writeAtomic(fmt.Sprintf("f%d.bin", i), randBytes(r, 300<<10))
	}
	waitSame(t, a, b, 2*time.Minute, func(m map[string]string) error {
		for k, v := range m {
			if want, _ := os.ReadFile(filepath.Join(a.folder, k)); v != "file:"+string(want) {
				return fmt.Errorf("%s not synced yet", k)
			}
		}
		return filesIn(4)(m)
	})
	waitKept(t, a, 8)
	waitKept(t, b, 8)
	before := versionsOf(t, b)

	b.stop()
	flipped := flipPackRecords(t, filepath.Join(b.home, "vaults", "*", "versions", "chunks", "packs", "*.pack"), 2)
	if flipped == 0 {
		t.Fatal("no record flipped in b's version store")
	}
	b.up()
	var res []api.ScrubResult
	if err := json.Unmarshal([]byte(b.must("scrub", "--json")), &res); err != nil || len(res) != 1 {
		t.Fatalf("scrub --json: %v %+v", err, res)
	}
	if res[0].VersionCorrupt != flipped {
		t.Fatalf("scrub found %d damaged chunks in the version store, want the %d flipped", res[0].VersionCorrupt, flipped)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		now := versionsOf(t, b)
		if now.Bytes == before.Bytes && now.Versions == before.Versions {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's version store holds %+v after the repair, want what it held before: %+v\n%s", now, before, b.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := json.Unmarshal([]byte(b.must("scrub", "--json")), &res); err != nil || res[0].VersionCorrupt != 0 {
		t.Fatalf("second scrub: %v %+v; want nothing damaged", err, res)
	}
}
