package node

import (
	"slices"
	"testing"

	"github.com/weftsync/weft/node/keyring"
	"github.com/weftsync/weft/node/memindex"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// TestDropAppliedLocked: after a restart only the paths whose index does
// not record their one head stay marked for reconciliation.
func TestDropAppliedLocked(t *testing.T) {
	a, b := keys.DeviceID{1}, keys.DeviceID{2}
	id := func(d keys.DeviceID, seq uint64) protocol.VersionID { return protocol.VersionID{Author: d, Seq: seq} }
	file := func(vid protocol.VersionID, path string, clock uint64, sup ...protocol.VersionID) protocol.Version {
		return protocol.Version{ID: vid, Path: path, Kind: protocol.KindFile, Clock: clock, ContentHash: [32]byte{byte(clock)}, Supersedes: sup}
	}
	versions := []protocol.Version{
		file(id(a, 1), "applied", 1),
		file(id(a, 2), "older", 2),
		file(id(a, 3), "older", 3, id(a, 2)),
		file(id(a, 4), "conflict", 4),
		file(id(b, 1), "conflict", 4),
		file(id(a, 5), "deleted", 5),
		{ID: id(a, 6), Path: "deleted", Kind: protocol.KindDeletion, Clock: 6, Supersedes: []protocol.VersionID{id(a, 5)}},
		file(id(a, 7), "unindexed", 7),
	}
	v := newBareVault()
	v.graph = protocol.NewGraph()
	for _, cv := range versions {
		if err := v.graph.Add(cv); err != nil {
			t.Fatalf("adding %v: %v", cv.ID, err)
		}
		v.eng.Touch(cv.Path)
	}
	rec := func(vid protocol.VersionID) vaultdb.Record {
		return vaultdb.Record{Version: vid, Kind: entry.KindFile}
	}
	v.setIndexLocked("applied", rec(id(a, 1)))
	v.setIndexLocked("older", rec(id(a, 2)))
	v.setIndexLocked("conflict", rec(id(a, 4)))
	v.setIndexLocked("deleted", rec(id(a, 5)))
	v.dropAppliedLocked()
	got := v.eng.DirtyPaths()
	want := []string{"conflict", "deleted", "older", "unindexed"}
	if !slices.Equal(got, want) {
		t.Errorf("got marked %q, want %q", got, want)
	}
}

// newBareVault is a vault with an empty index, graph and engine and no
// folder, store or node: enough for the index and reconcile bookkeeping.
func newBareVault() *vault {
	return &vault{
		index:  memindex.New(),
		graph:  protocol.NewGraph(),
		chunks: newFolderChunks(nil, keyring.New()),
		eng:    engine.New(engine.Config{}),
	}
}
