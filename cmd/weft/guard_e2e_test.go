package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// folderCode waits until d's one folder is in state with an errors[] item
// of code (any code when code is "").
func folderCode(state, code string) func(api.Status) error {
	return func(st api.Status) error {
		if len(st.Folders) != 1 {
			return fmt.Errorf("%d folders", len(st.Folders))
		}
		f := st.Folders[0]
		if f.State != state {
			return fmt.Errorf("state %q, want %q", f.State, state)
		}
		for _, e := range f.Errors {
			if code == "" || e.Code == code {
				return nil
			}
		}
		if code == "" {
			return nil
		}
		return fmt.Errorf("errors %+v, want one of code %s", f.Errors, code)
	}
}

// inSync waits for a folder in-sync with no errors.
func inSync(st api.Status) error {
	if f := st.Folders[0]; f.State != "in-sync" || len(f.Errors) != 0 {
		return fmt.Errorf("state %q, errors %+v", f.State, f.Errors)
	}
	return nil
}

// countTree waits for both folders to hold the same n files.
func filesIn(n int) func(map[string]string) error {
	return func(m map[string]string) error {
		got := 0
		for _, v := range m {
			if strings.HasPrefix(v, "file:") {
				got++
			}
		}
		if got != n {
			return fmt.Errorf("%d files, want %d", got, n)
		}
		return nil
	}
}

// B's folder swapped for an empty one while B is stopped (an unmounted
// drive): B starts, reports error with folder-marker-missing and authors
// nothing, A keeps every file; with the real folder back B syncs again
// without a restart.
func TestFolderSwappedForEmpty(t *testing.T) {
	a, b := pair(t)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 40 {
		size := 200 + r.IntN(2000)
		if i%10 == 0 {
			size = 300<<10 + r.IntN(100<<10) // chunked files too
		}
		a.writeAtomic(fmt.Sprintf("d%d/f%02d.bin", i%4, i), randBytes(r, size))
	}
	b.up()
	want := waitSame(t, a, b, 2*time.Minute, filesIn(40))
	waitStatus(t, b, time.Minute, inSync)
	written := b.status().Folders[0].Written
	b.stop()

	real := b.folder + ".real"
	if err := os.Rename(b.folder, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b.folder, 0o755); err != nil {
		t.Fatal(err)
	}
	b.up()
	waitStatus(t, b, time.Minute, folderCode("error", "folder-marker-missing"))
	if got := b.status().Folders[0].Written; got != written {
		t.Fatalf("b authored %d entries from the empty folder, want 0", got-written)
	}
	if code, out, _ := b.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "folder-marker-missing"`) {
		t.Fatalf("doctor on b: exit %d, output:\n%s\nwant exit 3 naming folder-marker-missing", code, out)
	}
	// a still has everything: b sent no deletion (its log did not grow).
	ta, err := tree(a.folder)
	if err != nil {
		t.Fatal(err)
	}
	if !sameTree(ta, want) {
		t.Fatalf("a lost files while b's folder was empty: %s", diffTree(ta, want))
	}
	// Nothing of the vault's was written into the empty folder (weft's
	// name-folding probe may leave its own empty .weft directory).
	if ents, _ := os.ReadDir(b.folder); len(ents) > 1 || len(ents) == 1 && ents[0].Name() != ".weft" {
		t.Fatalf("weft wrote %d entries into the empty folder", len(ents))
	}
	if _, err := os.Stat(filepath.Join(b.folder, ".weft", "folder-marker")); err == nil {
		t.Fatal("weft marked the empty folder as the vault's")
	}

	// The real folder back, with the agent running: it resumes by itself,
	// and an edit made on a meanwhile reaches it.
	a.writeAtomic("after.md", []byte("written while b was stopped"))
	if err := os.RemoveAll(b.folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(real, b.folder); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, time.Minute, filesIn(41))
	waitStatus(t, b, time.Minute, inSync)
	// And the watcher covers the folder again: an edit on b reaches a.
	b.writeAtomic("from-b.md", []byte("b is back"))
	waitSame(t, a, b, time.Minute, filesIn(42))
}

// 180 of 200 files deleted on A: the deletions are held on A (not sent),
// B keeps all 200; `weft deletions reject` brings them back on A. Deleted
// again and accepted, both end with 20.
func TestMassDeleteIsHeld(t *testing.T) {
	a, b := pair(t)
	var paths []string
	for i := range 200 {
		p := fmt.Sprintf("n%d/note%03d.md", i%5, i)
		paths = append(paths, p)
		a.writeAtomic(p, []byte("note "+p))
	}
	b.up()
	waitSame(t, a, b, 2*time.Minute, filesIn(200))
	waitStatus(t, a, time.Minute, inSync)

	deleteMost := func() {
		t.Helper()
		for _, p := range paths[:180] {
			if err := os.Remove(filepath.Join(a.folder, filepath.FromSlash(p))); err != nil {
				t.Fatal(err)
			}
		}
		a.must("scan")
		waitStatus(t, a, time.Minute, folderCode("held", "mass-delete"))
	}
	deleteMost()
	var held []api.HeldDeletions
	if err := json.Unmarshal([]byte(a.must("deletions", "--json")), &held); err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[0].Direction != "local" || held[0].Files != 180 {
		t.Fatalf("weft deletions: got %+v, want 180 local", held)
	}
	if out := a.must("deletions"); !strings.Contains(out, "180 files deleted on this device") {
		t.Fatalf("weft deletions output:\n%s", out)
	}
	// b has all 200 and is not asked anything: nothing was sent.
	tb, err := tree(b.folder)
	if err != nil {
		t.Fatal(err)
	}
	if err := filesIn(200)(tb); err != nil {
		t.Fatalf("b after a's held deletion: %v", err)
	}
	if st := b.status(); st.Folders[0].State == "held" {
		t.Fatalf("b is held too: %+v", st.Folders[0].Errors)
	}

	a.must("deletions", "reject")
	waitSame(t, a, b, time.Minute, filesIn(200))
	waitStatus(t, a, time.Minute, inSync)

	deleteMost()
	a.must("deletions", "accept", a.folder)
	waitSame(t, a, b, time.Minute, filesIn(20))
	waitStatus(t, a, time.Minute, inSync)
	waitStatus(t, b, time.Minute, inSync)
}

// A byte flipped in B's copy of a file, with its mtime put back: B takes it
// for damage, not an edit. B authors nothing, keeps the damaged copy in
// .weft/corrupt/, writes A's content again, and A's copy is untouched.
// `weft scrub` then finds every file sound.
func TestRotOnADeviceIsRepaired(t *testing.T) {
	a, b := pair(t)
	r := rand.New(rand.NewPCG(9, 10))
	big := randBytes(r, 300<<10) // chunked: repaired from a's chunks
	small := []byte("a small note, inline in the log")
	a.writeAtomic("big.bin", big)
	a.writeAtomic("note.md", small)
	b.up()
	waitSame(t, a, b, time.Minute, filesIn(2))
	waitStatus(t, b, time.Minute, inSync)
	written := b.status().Folders[0].Written
	aWritten := a.status().Folders[0].Written

	for _, f := range []struct {
		rel string
		at  int64
	}{{"big.bin", 200 << 10}, {"note.md", 3}} {
		p := filepath.Join(b.folder, f.rel)
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		fh, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := fh.ReadAt(one, f.at); err != nil {
			t.Fatal(err)
		}
		one[0] ^= 0x01
		if _, err := fh.WriteAt(one, f.at); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	var res []api.ScrubResult
	if err := json.Unmarshal([]byte(b.must("scrub", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["big.bin"] != "file:"+string(big) || m["note.md"] != "file:"+string(small) {
			return fmt.Errorf("not repaired yet")
		}
		return nil
	})
	waitStatus(t, b, time.Minute, inSync)
	for _, d := range []struct {
		dev  *device
		want uint64
	}{{b, written}, {a, aWritten}} {
		if got := d.dev.status().Folders[0].Written; got != d.want {
			t.Errorf("%s authored %d entries for the damage, want 0", d.dev.name, got-d.want)
		}
	}
	for _, rel := range []string{"big.bin", "note.md"} {
		aside, _ := filepath.Glob(filepath.Join(b.folder, ".weft", "corrupt", rel+"~*"))
		if len(aside) != 1 {
			t.Errorf("%s: damaged copies kept on b: %v, want one", rel, aside)
		}
	}
	if err := json.Unmarshal([]byte(b.must("scrub", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Files != 2 || len(res[0].Corrupt) != 0 {
		t.Fatalf("scrub after the repair: %+v, want 2 files verified, none damaged", res)
	}
}
