package node

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
)

// saveAfterWriteFS is the OS file system of a folder with an editor beside
// it: once armed, right after weft renames a file onto path, the editor's
// save (a temporary file renamed over it) lands, before weft has recorded
// or kept what it wrote. That is the narrowest form of the race, made
// deterministic.
type saveAfterWriteFS struct {
	folder.FS
	dir, path string
	save      atomic.Pointer[string] // the content the editor saves; nil: not armed
	saved     atomic.Bool
}

func (f *saveAfterWriteFS) Rename(from, to string) error {
	if err := f.FS.Rename(from, to); err != nil {
		return err
	}
	if to == f.path {
		if content := f.save.Swap(nil); content != nil {
			p := filepath.Join(f.dir, f.path)
			if err := os.WriteFile(p+".tmp-editor", []byte(*content), 0o644); err != nil {
				return err
			}
			if err := os.Rename(p+".tmp-editor", p); err != nil {
				return err
			}
			f.saved.Store(true)
		}
	}
	return nil
}

// A merge this device writes exists nowhere else until a peer fetches it.
// An editor's save made from the content before the merge, landing right
// after it, supersedes what was there before the write (applyrace.go), so
// the merge stays a head whose content the next decision needs. Before,
// the keeper copied the merge from the folder later, found the save there
// instead, and kept nothing: the merge's content was gone, the save could
// not be merged with it, and its conflict copy was retried forever on every
// device (TestTokenRace, seed 2, in CI). Now the merge is kept from the
// merged bytes as it is recorded, and the save merges cleanly with it.
func TestSaveRightAfterMergeKeepsTheMerge(t *testing.T) {
	clk := &testClock{t: time.Now()} // invites are checked against real time
	fsys := &saveAfterWriteFS{path: "log.md"}
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true, Now: clk.Now,
		FolderFS: func(d string) (folder.FS, error) {
			f, err := folder.OpenOS(d)
			fsys.FS, fsys.dir = f, d
			return fsys, err
		}})
	v := n.vaultsNow()[0]
	p := filepath.Join(folderPath, "log.md")
	ctx := t.Context()

	// x fits inline; the local edit h1 and the merge do not: they are
	// chunks that only this disk holds.
	x := strings.Repeat("a line of the shared note\n", 155) // 4,030 bytes
	token1 := "token-from-here-1 " + strings.Repeat("x", 60) + "\n"
	token2 := "token-from-here-2 " + strings.Repeat("y", 60) + "\n"
	peer := "peer-line\n"
	if err := os.WriteFile(p, []byte(x), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	xID := v.index.Rec("log.md").Version
	v.mu.Unlock()
	h1 := x + token1
	editorSave(t, p, h1)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	if rec := v.index.Rec("log.md"); len(rec.Chunks) == 0 {
		v.mu.Unlock()
		t.Fatalf("the local edit (%d bytes) is inline; the test needs it in chunks", len(h1))
	}
	v.mu.Unlock()

	// The editor read h1; its save lands right after weft writes the merge.
	save := h1 + token2
	fsys.save.Store(&save)

	// A peer's concurrent edit of x (inline) adds a line at the top: it
	// merges cleanly with h1 into a file of chunks, written by this device.
	_, id := joinAsMember(t, n)
	theirs := []byte(peer + x)
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "log.md", Kind: entry.KindFile, Mode: 0o644, MTime: clk.Now().UnixNano(),
			Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs), Supersedes: []entry.VersionID{xID}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ingestEntry(e.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	merge := peer + h1
	waitFor(t, "the merge to be recorded", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.index.Rec("log.md").Hash == blake3.Sum256([]byte(merge))
	})
	if !fsys.saved.Load() {
		t.Fatal("the editor's save did not land after the merge's write: the test did not exercise the race")
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	want := peer + h1 + token2
	waitFor(t, "the save merged with the merge", func() bool {
		b, err := os.ReadFile(p)
		return err == nil && string(b) == want
	})
	if got := logContents(folderPath); got != want {
		t.Fatalf("the folder holds more than the merged note (a conflict copy?):\n%s", got)
	}
}
