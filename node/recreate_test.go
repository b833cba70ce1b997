package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// Another device deletes f.txt (or moves it away); this device applies
// the deletion; then its user puts the very same bytes back at f.txt (a
// move back, or a restore from a backup). The new version must supersede
// the deletion it was made after. It superseded nothing (the path was no
// longer in the index), so it stood concurrent with the deletion, and the
// conflict rules took it for a re-recording of the content the deletion
// had removed and dropped it: the file was deleted again on every device
// (docs/simulation.md, finding 8).
func TestRecreateAfterAppliedDeletionSupersedesIt(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	ctx := context.Background()
	f := filepath.Join(folderPath, "f.txt")
	content := []byte("kept\n")
	a := writeScanned(t, v, folderPath, "f.txt", content)

	_, other := joinAsMember(t, n)
	del := reviewMemberEntry(t, v, other, []entry.Version{{Path: "f.txt", Kind: entry.KindDeletion, Supersedes: []entry.VersionID{a}}})
	if err := v.ingestEntry(del.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion applied", func() bool {
		_, err := os.Lstat(f)
		v.mu.Lock()
		_, indexed := v.index.Get("f.txt")
		v.mu.Unlock()
		return os.IsNotExist(err) && !indexed
	})

	if err := os.WriteFile(f, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	heads := v.view.Graph.Heads("f.txt")
	v.mu.Unlock()
	if len(heads) != 1 || heads[0].Kind == protocol.KindDeletion {
		t.Fatalf("got heads %v, want the recreated file alone", heads)
	}
	if err := v.rec.Path(ctx, "f.txt"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(f); err != nil || string(got) != string(content) {
		t.Errorf("f.txt after reconciling: %q, %v; want %q", got, err, content)
	}
}
