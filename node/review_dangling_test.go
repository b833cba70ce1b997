package node

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
)

// Three devices: A (the node) wrote f.txt (a1); C edited it (c1
// supersedes a1); B edited C's version (b1 supersedes c1). A peer streams
// B's log before C's (Missing ranges go in author order) and the node
// reconciles as soon as b1 is in: with c1 unknown, a1 and b1 look
// concurrent, so the node writes a conflict copy of its own stale a1 and
// records a resolution entry — for edits that were strictly sequential.
// docs/protocol/sync-core.md asks node/ to wait while Graph.Dangling(path)
// is non-empty; node/ never calls it.
func TestReviewDanglingSupersedesMakeSpuriousConflict(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(folderPath, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	self := n.id.ID()
	v.mu.Lock()
	a1 := v.index["f.txt"].Version
	v.mu.Unlock()
	// The running node's watcher may have recorded the file once more
	// (say empty, caught between create and write on a loaded machine):
	// what counts is that nothing is written after this.
	written := v.db.Head(self).Seq
	_, idC := joinAsMember(t, n)
	_, idB := joinAsMember(t, n)
	txt := func(s string, mtime int64, sup entry.VersionID) entry.Version {
		return entry.Version{Path: "f.txt", Kind: entry.KindFile, Mode: 0o644, MTime: mtime, Size: uint64(len(s)),
			Inline: []byte(s), Hash: blake3.Sum256([]byte(s)), Supersedes: []entry.VersionID{sup}}
	}
	now := time.Now()
	ec := reviewMemberEntry(t, v, idC, []entry.Version{txt("one\ntwo\n", now.Add(time.Minute).UnixNano(), a1)})
	// B had seen c1: its clock is above C's.
	eb, err := entry.New(entry.Config{Identity: idB, Vault: v.id, Clock: ec.Clock() + 1, Keys: v.ek, Time: now.UnixMilli(), Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{txt("one\ntwo\nthree\n", now.Add(2*time.Minute).UnixNano(), ec.VersionID(0))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ingestEntry(eb.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the reconcile loop runs before C's entry arrives
	if err := v.ingestEntry(ec.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	es, _ := os.ReadDir(folderPath)
	for _, e := range es {
		if strings.Contains(e.Name(), ".conflict-") {
			t.Errorf("spurious conflict copy %s for sequential edits a1 <- c1 <- b1", e.Name())
		}
	}
	if got := v.db.Head(self).Seq; got != written {
		t.Errorf("the node wrote %d entries, want %d (no resolution entry is due)", got, written)
	}
}
