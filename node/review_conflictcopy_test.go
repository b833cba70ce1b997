package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
)

// Device A (the node) holds f.bin (8 KiB, binary, chunked: version a1).
// Member B concurrently writes a different f.bin (b1, later mtime, small
// and inline). The core decides: b1 keeps the name, a1 becomes a conflict
// copy. reconcilePath writes the winner over f.bin first (step 1), then
// tries to write a1's copy (step 2) — but a1's chunks lived only in f.bin,
// which was just overwritten, and B never had them, so step 2 fails. The
// index still holds a1's record, so the retry (or the watcher) sees f.bin
// as a local edit, records b1's content superseding both heads, and a1's
// content is gone from every device. The same happens after a crash
// between step 1 and step 3.
func TestReviewConflictLoserLostWhenCopyFails(t *testing.T) {
	n, folderPath := testNode(t)
	v := n.vaultsNow()[0]
	ctx := context.Background()
	mine := make([]byte, 8192)
	if _, err := rand.Read(mine); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folderPath, "f.bin"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}

	// B's concurrent version: inline, later mtime, so it wins the name.
	_, id := joinAsMember(t, n)
	theirs := []byte("B's unrelated small binary\x00\x01\x02")
	b := entry.Version{Path: "f.bin", Kind: entry.KindFile, Mode: 0o644, MTime: time.Now().Add(time.Hour).UnixNano(),
		Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs)}
	eb := reviewMemberEntry(t, v, id, []entry.Version{b})
	w := watchPasses(t, v)
	from := w.len()
	if err := v.ingestEntry(eb.Bytes(), nil); err != nil {
		t.Fatal(err)
	}

	// Wait for a pass to end with the path settled on one head (the
	// decision recorded), then look for a1's bytes.
	oneHead := func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return len(v.view.Graph.Heads("f.bin")) == 1
	}
	w.wait(t, "f.bin to settle on one head", from, func(m passMark) bool { return m.kind == markEnded && oneHead() })
	if got, err := os.ReadFile(filepath.Join(folderPath, "f.bin")); err != nil || !bytes.Equal(got, theirs) {
		t.Errorf("f.bin holds %q (%v), want b1's content, the winner", got, err)
	}
	if !holdsContent(t, folderPath, mine) {
		v.mu.Lock()
		heads := v.view.HeadIDs("f.bin")
		v.mu.Unlock()
		t.Fatalf("f.bin settled on %v and no file in the folder holds a1's content: the loser of the conflict was lost", heads)
	}
}

// holdsContent reports whether any regular file under dir holds want.
func holdsContent(t *testing.T, dir string, want []byte) bool {
	t.Helper()
	found := false
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, want) {
			found = true
		}
		return nil
	})
	return found
}
