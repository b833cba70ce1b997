package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// The applier decides a path (a remote version B is the winner), and
// before it takes the scan lock to write B, a scan records the user's edit
// L of that path. The index then describes L, so the folder applier's
// "unchanged since the last scan" check passes: writing the stale decision
// would overwrite L, whose content (chunked, so not in any entry) exists
// only in that file. The decision must be made again instead, and both
// contents must end up in the folder (L and B meet as concurrent heads).
// the vault's onDecided hook forces the interleaving, so the test is deterministic.
func TestStaleDecisionDoesNotOverwriteLocalEdit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		chunked bool // B chunked: carried out alone; B inline: the small-file batch (node/reconcile)
	}{
		{"chunked remote version", true},
		{"inline remote version", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, dir := testNode(t)
			v := n.vaultsNow()[0]
			ctx := context.Background()
			bContent := bytes.Repeat([]byte("remote edit B, line\n"), 600)
			if !tc.chunked {
				bContent = []byte("remote edit B, small\n")
			}
			lContent := bytes.Repeat([]byte("local edit L, line\n"), 600) // > InlineLimit: on disk only
			f := filepath.Join(dir, "f.txt")
			writeTestFile(t, f, []byte("version A\n"))
			if tc.chunked {
				// B's chunks can be re-created from g.txt: no peer needed.
				writeTestFile(t, filepath.Join(dir, "g.txt"), bContent)
			}
			if _, err := v.scan(ctx, nil); err != nil {
				t.Fatal(err)
			}
			v.mu.Lock()
			a := v.index.Rec("f.txt").Version
			v.mu.Unlock()

			_, id := joinAsMember(t, n)
			b := entry.Version{Path: "f.txt", Kind: entry.KindFile, Mode: 0o644, MTime: time.Now().UnixNano(),
				Size: uint64(len(bContent)), Hash: blake3.Sum256(bContent), Inline: bContent}
			if tc.chunked {
				b = reviewChunkedVersion(t, v, "f.txt", bContent, time.Now().UnixNano())
			}
			b.Supersedes = []entry.VersionID{a}
			eb := reviewMemberEntry(t, v, id, []entry.Version{b})
			bID := eb.VersionID(0)

			// Once the applier has decided f.txt with B as its only head, the
			// user edits f.txt and the edit is scanned.
			fired := make(chan error, 1)
			var once sync.Once
			hook := func(p string) {
				v.mu.Lock()
				hs := v.view.Graph.Heads(p)
				v.mu.Unlock()
				if p != "f.txt" || len(hs) != 1 || hs[0].ID != bID {
					return
				}
				once.Do(func() {
					err := os.WriteFile(f, lContent, 0o644)
					if err == nil {
						_, err = v.scan(ctx, []string{"f.txt"})
					}
					fired <- err
				})
			}
			v.onDecided.Store(&hook)
			t.Cleanup(func() { v.onDecided.Store(nil) })

			if err := v.ingestEntry(eb.Bytes(), nil); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-fired:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the applier never decided f.txt with B as its head")
			}

			// Both contents must end up in the folder, and no temp file.
			want := map[[32]byte]string{blake3.Sum256(lContent): "L (the local edit)", blake3.Sum256(bContent): "B (the remote edit)"}
			var missing []string
			deadline := time.Now().Add(30 * time.Second)
			for {
				held, temps := folderContents(t, dir)
				missing = missing[:0]
				for h, name := range want {
					if !held[h] {
						missing = append(missing, name)
					}
				}
				if len(missing) == 0 && len(temps) == 0 && !pathDirty(v, "f.txt") {
					return
				}
				if time.Now().After(deadline) {
					slices.Sort(missing)
					t.Fatalf("after the apply: contents missing from the folder: %v; temp files left: %v", missing, temps)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

func writeTestFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// folderContents returns the BLAKE3 of every regular file in dir (outside
// .weft) and the applier temp files found.
func folderContents(t *testing.T, dir string) (map[[32]byte]bool, []string) {
	t.Helper()
	held := map[[32]byte]bool{}
	var temps []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == folder.WorkDir {
			return filepath.SkipDir
		}
		if strings.HasPrefix(d.Name(), folder.TempPrefix) {
			temps = append(temps, p)
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil // replaced while we looked: the next poll sees it
			}
			held[blake3.Sum256(b)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return held, temps
}

// pathDirty asks the engine's loop whether p waits for a decision. v.mu
// must not be held.
func pathDirty(v *vault, p string) (dirty bool) {
	v.engine.Do(func(e *engine.Engine) { dirty = e.IsDirty(p) })
	return dirty
}
