package node

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/store/vaultdb"
)

// A folder swapped for an empty one (an unmounted drive, a moved folder)
// while the agent runs is stopped: nothing is scanned, recorded or
// applied, status says error with folder-marker-missing, and putting the
// real folder back resumes it with nothing deleted.
func TestFolderGuardStopsAReplacedFolder(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	paths := writeNotes(t, folderPath, 30)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(folderPath, folder.MarkerPath)); err != nil {
		t.Fatalf("no folder marker after the first scan: %v", err)
	}
	v := n.vaultsNow()[0]
	seq := v.db.Head(n.ID()).Seq

	away := folderPath + ".away"
	if err := os.Rename(folderPath, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folderPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); !errors.Is(err, errFolderStopped) {
		t.Fatalf("scan of the replaced folder: %v, want errFolderStopped", err)
	}
	if state, codes := folderState(n); state != "error" || !slices.Contains(codes, api.CodeMarkerMissing) {
		t.Fatalf("status: state %q, codes %v; want error with %s", state, codes, api.CodeMarkerMissing)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq {
		t.Fatalf("the replaced folder authored %d entries, want 0", got-seq)
	}
	// Nothing was written into the moved folder either (weft held it open).
	if ents, _ := os.ReadDir(folderPath); len(ents) > 1 {
		t.Fatalf("the empty folder got %d entries", len(ents))
	}

	// The real folder back: it resumes, and nothing is deleted.
	if err := os.Remove(folderPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, folderPath); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatalf("scan once the folder is back: %v", err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq {
		t.Fatalf("the folder put back authored %d entries, want 0", got-seq)
	}
	if state, codes := folderState(n); state == "error" || len(codes) != 0 {
		t.Fatalf("status once back: state %q, codes %v", state, codes)
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(folderPath, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// A stopped folder resumes by itself (the guard's recheck), without a
// scan asked for.
func TestFolderGuardResumesByItself(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	writeNotes(t, folderPath, 5)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(folderPath, folder.MarkerPath)
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the folder to stop without its marker", func() bool {
		state, codes := folderState(n)
		return state == "error" && slices.Contains(codes, api.CodeMarkerMissing)
	})
	if err := os.WriteFile(marker, b, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the folder to resume with its marker back", func() bool {
		state, codes := folderState(n)
		return state == "in-sync" && len(codes) == 0
	})
}

// A marker naming another vault stops the folder; `weft folder reset`
// makes it this vault's folder again.
func TestFolderGuardForeignMarkerAndReset(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	writeNotes(t, folderPath, 5)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	fsys, err := folder.OpenOS(folderPath)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if err := folder.WriteMarker(fsys, "00112233445566778899aabbccddeeff"); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); !errors.Is(err, errFolderStopped) {
		t.Fatalf("scan with another vault's marker: %v, want errFolderStopped", err)
	}
	if _, codes := folderState(n); !slices.Contains(codes, api.CodeMarkerForeign) {
		t.Fatalf("codes %v, want %s", codes, api.CodeMarkerForeign)
	}
	if err := n.API().ResetFolder(folderPath); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatalf("scan after reset: %v", err)
	}
	if err := n.API().ResetFolder(folderPath); !errors.Is(err, errFolderNotStop) {
		t.Fatalf("reset of a running folder: %v, want errFolderNotStop", err)
	}
}

// A vault from before folder markers gets one at its first check while
// its folder holds files; with its index holding files and its root empty
// it is stopped instead.
func TestFolderGuardMarksOldVaults(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	writeNotes(t, folderPath, 5)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	unmark := func() {
		t.Helper()
		if err := os.Remove(filepath.Join(folderPath, folder.MarkerPath)); err != nil {
			t.Fatal(err)
		}
		u := &vaultdb.Update{}
		u.DeleteMeta(metaMarked)
		if err := v.db.Commit(u); err != nil {
			t.Fatal(err)
		}
	}
	unmark()
	if err := n.Scan(ctx); err != nil {
		t.Fatalf("scan of an unmarked folder with its files: %v", err)
	}
	if _, err := os.Stat(filepath.Join(folderPath, folder.MarkerPath)); err != nil {
		t.Fatalf("no marker written: %v", err)
	}
	unmark()
	if err := os.RemoveAll(filepath.Join(folderPath, "notes")); err != nil {
		t.Fatal(err)
	}
	seq := v.db.Head(n.ID()).Seq
	if err := n.Scan(ctx); !errors.Is(err, errFolderStopped) {
		t.Fatalf("scan of an unmarked empty folder whose index holds files: %v, want errFolderStopped", err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq {
		t.Fatalf("authored %d entries, want 0", got-seq)
	}
}

// After an index rebuild (no folder records, no marked flag) an empty
// folder is not marked as the vault's while the log holds files for it.
func TestFolderGuardEmptyAfterIndexLoss(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	writeNotes(t, folderPath, 5)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	// What a rebuild leaves: the log, no records, no flag; and the drive
	// not mounted.
	u := &vaultdb.Update{}
	u.DeleteMeta(metaMarked)
	v.mu.Lock()
	for p := range v.index.All() {
		u.DeleteIndex(p)
	}
	v.mu.Unlock()
	if err := v.db.Commit(u); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	for _, p := range slices.Collect(maps.Keys(maps.Collect(v.index.All()))) {
		v.setIndexLocked(p, vaultdb.Record{})
	}
	v.mu.Unlock()
	if err := os.RemoveAll(folderPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folderPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); !errors.Is(err, errFolderStopped) {
		t.Fatalf("scan of an empty folder after index loss: %v, want errFolderStopped", err)
	}
	if _, err := os.Stat(filepath.Join(folderPath, folder.MarkerPath)); err == nil {
		t.Fatal("the empty folder was marked as the vault's")
	}
}
