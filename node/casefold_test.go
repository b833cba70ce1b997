package node

import (
	"context"
	"crypto/rand"
	"io"
	"strings"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/entry"
)

// TestCaseCollisionOnFoldingFS checks the node on a case-insensitive file
// system (an in-memory one): two synced paths that differ only by case
// both land, the one that sorts first under its name and the other under
// its collision name (docs/folder.md, "Names"), and the device settles
// instead of retrying forever.
func TestCaseCollisionOnFoldingFS(t *testing.T) {
	mem := folder.NewMemFS(folder.MemFSConfig{Folding: folder.Folding{CaseInsensitive: true}})
	n, _ := testNodeWith(t, Config{NoWatcher: true, FolderFS: func(string) (folder.FS, error) { return mem, nil }})
	h, id := joinAsMember(t, n)
	v := n.vaultsNow()[0]
	contents := map[string]string{"readme.md": "lower", "README.md": "UPPER"}
	var prev entry.Head
	var es []*entry.Entry
	for i, p := range []string{"readme.md", "README.md"} {
		data := []byte(contents[p])
		body := &entry.Body{Versions: []entry.Version{{Path: p, Kind: entry.KindFile, Mode: 0o644, MTime: 1e18,
			Size: uint64(len(data)), Inline: data, Hash: blake3.Sum256(data)}}}
		e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Prev: prev, Clock: uint64(i + 1), Keys: v.ek, Time: 1, Rand: rand.Reader}, body)
		if err != nil {
			t.Fatal(err)
		}
		es, prev = append(es, e), e.Head()
	}
	serveLog(h, v.id, es, nil)
	connectHost(t, h, n)
	read := func(p string) string {
		f, err := mem.Open(p)
		if err != nil {
			return ""
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		return string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := mem.ReadDir("")
		var names []string
		for _, e := range ents {
			if !strings.HasPrefix(e.Name, ".") {
				names = append(names, e.Name)
			}
		}
		st := v.status()
		if len(names) == 2 && read("README.md") == "UPPER" && read(folder.CollisionName("readme.md", 0)) == "lower" &&
			st.PendingApply == 0 && len(st.Errors) == 0 {
			// Settled: a rescan finds the collision copy as a file of its
			// own to sync, and nothing else.
			if err := n.Scan(context.Background()); err != nil {
				t.Fatal(err)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ents, _ := mem.ReadDir("")
	t.Fatalf("did not settle: disk %v, status %+v", ents, v.status())
}
