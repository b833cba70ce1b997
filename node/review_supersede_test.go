package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/record"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// reviewMemberEntry signs versions as the first entry of member id's log.
func reviewMemberEntry(t *testing.T, v *vault, id *keys.Identity, vs []entry.Version) *entry.Entry {
	t.Helper()
	v.mu.Lock()
	clock := v.view.Clock + 1
	v.mu.Unlock()
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: clock, Keys: v.ek, Time: time.Now().UnixMilli(), Rand: rand.Reader},
		&entry.Body{Versions: vs})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// writeScanned writes content to name in the folder, scans, and returns
// the version the index then records there.
func writeScanned(t *testing.T, v *vault, folderPath, name string, content []byte) entry.VersionID {
	t.Helper()
	if err := os.WriteFile(filepath.Join(folderPath, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.index.Rec(name).Version
}

// reviewChunkedVersion is a chunked file version of content (chunks that
// nobody will serve).
func reviewChunkedVersion(t *testing.T, v *vault, path string, content []byte, mtime int64) entry.Version {
	t.Helper()
	h, err := chunkHasher{keys: v.ck}.Hash(context.Background(), path, bytes.NewReader(content), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	return entry.Version{Path: path, Kind: entry.KindFile, Mode: 0o644, MTime: mtime, Size: uint64(len(content)),
		Hash: h.Hash, Chunks: h.Extra.(record.Content).Chunks}
}

// A remote edit B of f.txt (superseding the local version A) has arrived
// but is not on disk (its chunks never come, so its apply failed). The
// user then edits f.txt locally. That edit was made on top of A, not B:
// it is concurrent with B and the two must meet as a conflict (or merge).
// Recording the local edit as superseding every graph head, B included,
// would drop B on every device without a conflict copy.
func TestReviewLocalEditSupersedesUnappliedRemoteEdit(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	v := n.vaultsNow()[0]
	ctx := context.Background()
	f := filepath.Join(folderPath, "f.txt")
	a := writeScanned(t, v, folderPath, "f.txt", []byte("version A\n"))

	// Member B edits f.txt (superseding A). B's chunks are never served.
	_, id := joinAsMember(t, n)
	bContent := bytes.Repeat([]byte("remote edit by B, line\n"), 400) // > InlineLimit
	b := reviewChunkedVersion(t, v, "f.txt", bContent, time.Now().UnixNano())
	b.Supersedes = []entry.VersionID{a}
	eb := reviewMemberEntry(t, v, id, []entry.Version{b})
	w := watchPasses(t, v)
	from := w.len()
	if err := v.ingestEntry(eb.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	bID := eb.VersionID(0)
	w.passEndedAfter(t, "the apply of B fails (no chunks)", from, markError, "f.txt")
	if got, err := os.ReadFile(f); err != nil || string(got) != "version A\n" {
		t.Fatalf("f.txt after B's failed apply: %q (%v), want A's content still", got, err)
	}

	// The user edits f.txt on top of A.
	if err := os.WriteFile(f, []byte("version A\nlocal edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, []string{"f.txt"}); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	heads := v.view.HeadIDs("f.txt")
	local := v.index.Rec("f.txt").Version
	body, _ := v.view.Body(local)
	sup := body.Supersedes
	v.mu.Unlock()
	if !slices.Equal(sup, []entry.VersionID{a}) {
		t.Errorf("the local edit %v supersedes %v, want A (%v) alone: it was made on top of A and never saw B (%v)", local, sup, a, bID)
	}
	if len(heads) != 2 || !slices.Contains(heads, bID) || !slices.Contains(heads, local) {
		t.Fatalf("heads of f.txt after a local edit made on top of A: %v; want B (%v) and the local edit (%v), concurrent", heads, bID, local)
	}
}
