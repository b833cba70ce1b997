package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// reviewMemberEntry signs versions as the first entry of member id's log.
func reviewMemberEntry(t *testing.T, v *vault, id *keys.Identity, vs []entry.Version) *entry.Entry {
	t.Helper()
	v.mu.Lock()
	clock := v.clock + 1
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
	return v.index[name].Version
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
		Hash: h.Hash, Chunks: h.Extra.(hashExtra).chunks}
}

// A remote edit B of f.txt (superseding the local version A) has arrived
// but is not on disk yet (its chunks are still to come). The user then
// edits f.txt locally. That edit was made on top of A, not B: it is
// concurrent with B and the two must meet as a conflict (or merge). The
// node instead records the local edit as superseding every graph head,
// B included, so B is dropped on every device without a conflict copy.
func TestReviewLocalEditSupersedesUnappliedRemoteEdit(t *testing.T) {
	n, folderPath := testNode(t)
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
	if err := v.ingestEntry(eb.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	bID := eb.VersionID(0)
	time.Sleep(500 * time.Millisecond) // the apply of B fails: no chunks

	// The user edits f.txt on top of A.
	if err := os.WriteFile(f, []byte("version A\nlocal edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, []string{"f.txt"}); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	heads := v.headIDsLocked("f.txt")
	v.mu.Unlock()
	for _, h := range heads {
		if h == bID {
			return // B is still a head: it meets the local edit as a conflict
		}
	}
	t.Fatalf("heads of f.txt after a local edit made on top of A: %v; B (%v) was superseded by an edit that never saw it", heads, bID)
}
