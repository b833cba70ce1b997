package node

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/enrol"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/graphsnap"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// derivedState is what openVault derives from the log, for comparing a
// start from the graph snapshot with a start that replays every entry.
type derivedState struct {
	versions map[protocol.VersionID]protocol.Version
	bodies   map[protocol.VersionID]entry.Version
	clock    uint64
	folded   map[keys.DeviceID]uint64
	dirty    map[string]struct{}
	graphLen int
}

func derivedOf(v *vault) derivedState {
	var dirty []string
	v.engine.Do(func(e *engine.Engine) { dirty = e.DirtyPaths() })
	v.mu.Lock()
	defer v.mu.Unlock()
	s := derivedState{versions: map[protocol.VersionID]protocol.Version{}, bodies: map[protocol.VersionID]entry.Version{},
		clock: v.view.Clock, folded: maps.Clone(v.view.Folded), dirty: map[string]struct{}{}}
	for _, p := range dirty {
		s.dirty[p] = struct{}{}
	}
	for cv, body := range v.view.Bodies() {
		s.versions[cv.ID], s.bodies[cv.ID] = cv, body
	}
	s.graphLen = v.view.Graph.Len()
	return s
}

// TestGraphSnapshotRestart: a vault stopped cleanly starts from its graph
// snapshot, reading no entry back from the log, and derives exactly what a
// full replay derives; entries appended after the snapshot (a run that
// ended without writing one) are replayed after it; a damaged snapshot, or
// one that names an entry the log does not hold, is ignored and the whole
// log replayed.
func TestGraphSnapshotRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h, err := home.Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	folderPath := filepath.Join(dir, "folder")
	// A named device: its entries carry the name (format 3), which the
	// snapshot must keep for the versions it holds.
	if _, _, err := enrol.InitVault(h, folderPath, "Zoë's phone", time.Now()); err != nil {
		t.Fatal(err)
	}
	open := func() (*Node, *vault) {
		n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
			NoWatcher: true, NoDHT: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return n, n.vaultsNow()[0]
	}
	stop := func(n *Node, snapshot bool) {
		if snapshot {
			n.stopVaults()
		} else {
			n.closeVaults() // as a crash would leave it: no new snapshot
		}
		n.host.Close()
	}
	write := func(rel, content string) {
		p := filepath.Join(folderPath, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(n *Node) {
		if err := n.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 3<<20) // chunked, not inline
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}

	n, v := open()
	write("notes/a.md", "alpha\n")
	write("notes/b.md", "beta\n")
	write("big.bin", string(big))
	write("small.bin", "\x00\x01\x02 not text") // inline, and not a merge candidate
	if err := os.Symlink("notes/a.md", filepath.Join(folderPath, "link")); err != nil {
		t.Fatal(err)
	}
	scan(n)
	write("notes/a.md", "alpha, edited\n")
	if err := os.Remove(filepath.Join(folderPath, "notes/b.md")); err != nil {
		t.Fatal(err)
	}
	scan(n)
	me := n.ID()
	if seq := v.db.Head(me).Seq; seq < 2 {
		t.Fatalf("own head %d after two scans with changes, want >= 2", seq)
	}
	stop(n, true)
	if _, err := os.Stat(filepath.Join(v.cfg.Dir, graphSnapFile)); err != nil {
		t.Fatalf("no snapshot after a clean stop: %v", err)
	}

	// replayAll opens the vault with its snapshot set aside, then puts it
	// back: the derived state of a full replay.
	replayAll := func() derivedState {
		t.Helper()
		path := filepath.Join(v.cfg.Dir, graphSnapFile)
		if err := os.Rename(path, path+".aside"); err != nil {
			t.Fatal(err)
		}
		n, v := open()
		defer stop(n, false)
		if v.opened.fromSnapshot || v.opened.replayed != int(v.db.Head(me).Seq) {
			t.Fatalf("without a snapshot: %+v, want every one of %d entries replayed", v.opened, v.db.Head(me).Seq)
		}
		if err := os.Rename(path+".aside", path); err != nil {
			t.Fatal(err)
		}
		return derivedOf(v)
	}

	want := replayAll()
	if len(want.bodies) < 6 {
		t.Fatalf("full replay holds %d versions, want the 6 written and the edit and deletion", len(want.bodies))
	}
	for id, ver := range want.versions {
		if ver.AuthorName != "Zoë's phone" {
			t.Fatalf("version %v of %s: author name %q, want the device's", id, ver.Path, ver.AuthorName)
		}
	}
	n, v = open()
	if !v.opened.fromSnapshot || v.opened.replayed != 0 {
		t.Fatalf("clean restart: %+v, want the snapshot and no entry replayed", v.opened)
	}
	// The folder index, loaded from its own file, keeps the graph's chunk
	// list of the file, not a copy.
	rec := v.index.Rec("big.bin")
	body, _ := v.view.Body(rec.Version)
	if len(rec.Chunks) < 2 || len(body.Chunks) != len(rec.Chunks) || &rec.Chunks[0] != &body.Chunks[0] {
		t.Fatalf("big.bin: the index holds %d chunks, the graph %d, not one shared list", len(rec.Chunks), len(body.Chunks))
	}
	if got := derivedOf(v); !reflect.DeepEqual(got, want) {
		t.Fatalf("state from the snapshot differs from a full replay:\n got %+v\nwant %+v", got, want)
	}
	// Of the paths the snapshot folded in, only the deleted one needs a
	// decision: the index records every other path's one head.
	if !reflect.DeepEqual(want.dirty, map[string]struct{}{"notes/b.md": {}}) {
		t.Fatalf("dirty after a clean restart: %v, want only notes/b.md (its head is a deletion)", want.dirty)
	}

	// A path the snapshot folded in whose index record is not its head
	// (gone here) needs a decision after a restart from the snapshot, as
	// after a full replay.
	aRec, ok := v.index.Get("notes/a.md")
	if !ok {
		t.Fatal("notes/a.md is not indexed")
	}
	commit := func(u *vaultdb.Update) {
		t.Helper()
		if err := v.db.Commit(u); err != nil {
			t.Fatal(err)
		}
	}
	u := &vaultdb.Update{}
	u.DeleteIndex("notes/a.md")
	commit(u)
	stop(n, false)
	want = replayAll()
	if !reflect.DeepEqual(want.dirty, map[string]struct{}{"notes/a.md": {}, "notes/b.md": {}}) {
		t.Fatalf("dirty after a full replay with notes/a.md unindexed: %v, want notes/a.md and notes/b.md", want.dirty)
	}
	n, v = open()
	if !v.opened.fromSnapshot || v.opened.replayed != 0 {
		t.Fatalf("restart with an index record gone: %+v, want the snapshot and no entry replayed", v.opened)
	}
	if got := derivedOf(v); !reflect.DeepEqual(got, want) {
		t.Fatalf("with an index record gone, the state from the snapshot differs from a full replay:\n got %+v\nwant %+v", got, want)
	}
	// The check a restart runs on every core, split any way, finds the
	// same paths, in order.
	var all []string
	for range 3 {
		all = append(all, v.view.Graph.Paths()...)
	}
	slices.Sort(all)
	for _, workers := range []int{0, 1, 2, 5, len(all) + 1} {
		got := notAtHead(guardIndex{v}, all, workers)
		want := []string{"notes/a.md", "notes/a.md", "notes/a.md", "notes/b.md", "notes/b.md", "notes/b.md"}
		if !slices.Equal(got, want) {
			t.Fatalf("notAtHead on %d goroutines: %q, want %q", workers, got, want)
		}
	}
	u = &vaultdb.Update{}
	u.PutIndex("notes/a.md", aRec)
	commit(u)
	stop(n, false)
	n, v = open()
	if got := derivedOf(v); !reflect.DeepEqual(got.dirty, map[string]struct{}{"notes/b.md": {}}) {
		t.Fatalf("dirty with the index record back: %v, want only notes/b.md", got.dirty)
	}

	// A change recorded, then a stop that writes no snapshot.
	write("notes/c.md", "gamma\n")
	scan(n)
	stop(n, false)
	want = replayAll()
	n, v = open()
	if !v.opened.fromSnapshot || v.opened.replayed != 1 {
		t.Fatalf("restart after an unsnapshotted entry: %+v, want the snapshot and 1 entry replayed", v.opened)
	}
	if got := derivedOf(v); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot plus tail differs from a full replay:\n got %+v\nwant %+v", got, want)
	}
	stop(n, true) // writes a new snapshot: one more entry was folded in
	n, v = open()
	if !v.opened.fromSnapshot || v.opened.replayed != 0 {
		t.Fatalf("after a clean stop: %+v, want the snapshot and no entry replayed", v.opened)
	}
	stop(n, true)
	path := filepath.Join(v.cfg.Dir, graphSnapFile)

	// A snapshot whose checksum holds but whose bytes stop decoding after
	// its versions were folded in (the versions are decoded one at a
	// time): what it folded in is undone and the whole log replayed. Its
	// last version is one the log does not hold, so a version folded in
	// and not undone shows.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := graphsnap.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	ghost := s.Versions[0]
	ghost.ID.Seq, ghost.Body.Path = 999, "ghost.md"
	s.Versions = append(s.Versions, ghost)
	enc := graphsnap.Encode(s)
	trailing := append(slices.Clone(enc[:len(enc)-4]), 0)
	trailing = binary.LittleEndian.AppendUint32(trailing, crc32.Checksum(trailing, crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, trailing, 0o600); err != nil {
		t.Fatal(err)
	}
	// fullReplay opens the vault and checks that it replayed every entry
	// into what a replay without the snapshot derives.
	fullReplay := func(what string) {
		t.Helper()
		n, v := open()
		defer stop(n, false)
		if v.opened.fromSnapshot || v.opened.replayed != int(v.db.Head(me).Seq) {
			t.Fatalf("%s: %+v, want a full replay", what, v.opened)
		}
		if got := derivedOf(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the full replay differs:\n got %+v\nwant %+v", what, got, want)
		}
	}
	fullReplay("snapshot with bytes after its versions")
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}

	// A snapshot that names an entry the log does not hold (as after a log
	// lost its tail) is ignored.
	s, err = graphsnap.Read(path)
	if err != nil || s == nil {
		t.Fatalf("reading the snapshot: %v, %v", s, err)
	}
	r := s.Reach[me]
	r.CID = want.bodies[protocol.VersionID{Author: me, Seq: 1}].Chunks[0].CID // any other CID
	s.Reach[me] = r
	if err := graphsnap.Write(path, s); err != nil {
		t.Fatal(err)
	}
	fullReplay("snapshot naming another entry")

	// A damaged snapshot is ignored.
	if err := os.WriteFile(path, []byte("weft-graphsnap damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	fullReplay("damaged snapshot")
}
