package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// B's vault index damaged while B is stopped, seven ways (the index
// deleted, CURRENT garbled, a table file's bytes flipped, a table deleted,
// the index replaced by a file, the manifest deleted, the manifest
// truncated): B rebuilds it from the logs, adopts what is on disk as the
// heads it holds, and syncs on without a conflict copy, without authoring
// anything, and with A untouched. Every path has a history across both
// devices (written on A, edited twice on B), so each has ancestors a bad
// adoption would bring back. (B edits only files whose last apply created
// them: an edit within 2 s of weft replacing a file meets the replaced
// version as concurrent, docs/sync.md.)
func TestIndexRebuildAdoptsTheDisk(t *testing.T) {
	a, b := pair(t)
	// A rebuilt index has lost where the members listen (docs/storage-vault.md):
	// A finds B again at its fixed port (with random ports alone they would
	// not meet without mDNS; issue 18).
	b.upArgs = []string{"--mdns=false", "--listen", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", freePort(t))}
	b.up()
	r := rand.New(rand.NewPCG(41, 42))
	const n = 12
	name := func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf("big/f%02d.bin", i)
		}
		return fmt.Sprintf("notes/n%02d.md", i)
	}
	content := func(i, round int) []byte {
		if i%3 == 0 {
			return randBytes(r, 200<<10)
		}
		return []byte(fmt.Sprintf("# note %d\n\nline one\nline two, round %d\n", i, round))
	}
	for i := range n {
		a.writeAtomic(name(i), content(i, 1))
	}
	waitSame(t, a, b, 2*time.Minute, filesIn(n))
	for i := range n {
		b.writeAtomic(name(i), content(i, 2))
	}
	waitSame(t, a, b, 2*time.Minute, sameAs(b, n))
	for i := range n {
		b.writeAtomic(name(i), content(i, 3)) // b edits its own version: no apply in between
	}
	want := waitSame(t, a, b, 2*time.Minute, sameAs(b, n))
	waitStatus(t, b, time.Minute, inSync)

	damages := []struct {
		name string
		do   func(t *testing.T, index string)
	}{
		{"index deleted", func(t *testing.T, index string) {
			if err := os.RemoveAll(index); err != nil {
				t.Fatal(err)
			}
		}},
		{"CURRENT garbled", func(t *testing.T, index string) {
			if err := os.WriteFile(filepath.Join(index, "CURRENT"), []byte("MANIFEST-999999\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"table bytes flipped", func(t *testing.T, index string) {
			files, _ := filepath.Glob(filepath.Join(index, "*.ldb"))
			files2, _ := filepath.Glob(filepath.Join(index, "*.log"))
			files = append(files, files2...)
			flipped := 0
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil || len(data) < 64 {
					continue
				}
				for _, at := range []int{16, len(data) / 2, len(data) - 16} {
					data[at] ^= 0xff
				}
				if err := os.WriteFile(f, data, 0o644); err != nil {
					t.Fatal(err)
				}
				flipped++
			}
			if flipped == 0 {
				t.Fatal("no index file to damage")
			}
		}},
		{"table deleted", func(t *testing.T, index string) {
			files, _ := filepath.Glob(filepath.Join(index, "*.ldb"))
			if len(files) == 0 {
				// Everything still in the journal: delete that instead.
				files, _ = filepath.Glob(filepath.Join(index, "*.log"))
			}
			if len(files) == 0 {
				t.Fatal("no index file to delete")
			}
			if err := os.Remove(files[0]); err != nil {
				t.Fatal(err)
			}
		}},
		{"index replaced by a file", func(t *testing.T, index string) {
			if err := os.RemoveAll(index); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(index, []byte("not a database"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"manifest deleted", func(t *testing.T, index string) {
			ms, _ := filepath.Glob(filepath.Join(index, "MANIFEST-*"))
			for _, m := range ms {
				if err := os.Remove(m); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"manifest truncated", func(t *testing.T, index string) {
			ms, _ := filepath.Glob(filepath.Join(index, "MANIFEST-*"))
			if len(ms) == 0 {
				t.Fatal("no manifest")
			}
			for _, m := range ms {
				if err := os.Truncate(m, 10); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			written := b.status().Folders[0].Written
			aWritten := a.status().Folders[0].Written
			b.stop()
			idx, err := filepath.Glob(filepath.Join(b.home, "vaults", "*", "db", "index"))
			if err != nil || len(idx) != 1 {
				t.Fatalf("b's index: %v %v", idx, err)
			}
			d.do(t, idx[0])
			recovered := strings.Count(b.logAll(), "vault index rebuilt")
			b.up()
			waitStatus(t, b, time.Minute, inSync)
			if got := strings.Count(b.logAll(), "vault index rebuilt"); got != recovered+1 {
				t.Fatalf("b's log says the index was rebuilt %d times after this damage, want once (the damage did not reach it)", got-recovered)
			}
			waitStatus(t, a, time.Minute, inSync)
			got := waitSame(t, a, b, time.Minute, func(map[string]string) error { return nil })
			for p := range got {
				if isConflictName(p) {
					t.Errorf("conflict copy %s after the rebuild", p)
				}
			}
			for p, c := range want {
				if got[p] != c {
					t.Errorf("%s changed by the rebuild", p)
				}
			}
			if w := b.status().Folders[0].Written; w != written {
				t.Errorf("b wrote %d entries after the rebuild, want none", w-written)
			}
			if w := a.status().Folders[0].Written; w != aWritten {
				t.Errorf("a wrote %d entries, want none", w-aWritten)
			}
		})
	}
	// And sync goes on both ways.
	b.writeAtomic("notes/after.md", []byte("written on b after the rebuilds\n"))
	a.writeAtomic("notes/n01.md", []byte("# note 1\n\nedited on a after the rebuilds\n"))
	waitSame(t, a, b, time.Minute, filesIn(n+1))
}

// sameAs waits for both folders to hold d's current files, n of them.
func sameAs(d *device, n int) func(map[string]string) error {
	return func(m map[string]string) error {
		if err := filesIn(n)(m); err != nil {
			return err
		}
		for p, v := range m {
			if !strings.HasPrefix(v, "file:") {
				continue
			}
			want, err := os.ReadFile(filepath.Join(d.folder, filepath.FromSlash(p)))
			if err != nil || v != "file:"+string(want) {
				return fmt.Errorf("%s not as on %s yet", p, d.name)
			}
		}
		return nil
	}
}

// isConflictName reports whether a path is named like a conflict copy.
func isConflictName(p string) bool { return strings.Contains(p, ".conflict-") }
