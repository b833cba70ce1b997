package carry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// fakeVault is a vault over an in-memory folder: an index kept by hand,
// bodies carrying their content inline, and a record of what was asked.
type fakeVault struct {
	t       *testing.T
	fs      *folder.MemFS
	applier *folder.Applier
	index   map[string]vaultdb.Record
	bodies  map[protocol.VersionID]entry.Version
	held    bool     // scans are held
	events  []string // type and path of each event, in order
	scanned [][]string
	// resolutions are the records each RecordResolution was asked for.
	resolutions  [][]vaultdb.Record
	heldAtRecord []bool
}

func newFake(t *testing.T) *fakeVault {
	v := &fakeVault{t: t, fs: folder.NewMemFS(folder.MemFSConfig{}), index: map[string]vaultdb.Record{}, bodies: map[protocol.VersionID]entry.Version{}}
	a, err := folder.NewApplier(folder.ApplierConfig{FS: v.fs, Index: fakeIndex{v}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	v.applier = a
	return v
}

// put writes b at p on disk and indexes it as version id.
func (v *fakeVault) put(p string, id protocol.VersionID, b string) entry.Version {
	v.t.Helper()
	ver := v.body(p, id, b)
	rec, err := Version(context.Background(), v, id, ver, vaultdb.Record{}, false)
	if err != nil {
		v.t.Fatal(err)
	}
	v.index[p] = rec
	v.events = nil
	return ver
}

// body is version id of a file at p holding b, known to the vault.
func (v *fakeVault) body(p string, id protocol.VersionID, b string) entry.Version {
	ver := entry.Version{Path: p, Kind: entry.KindFile, Size: uint64(len(b)), Hash: blake3.Sum256([]byte(b)), Inline: []byte(b), Mode: 0o644, MTime: 1e18}
	v.bodies[id] = ver
	return ver
}

func (v *fakeVault) read(p string) string {
	v.t.Helper()
	f, err := v.fs.Open(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		v.t.Fatal(err)
	}
	return string(b)
}

type fakeIndex struct{ v *fakeVault }

func (x fakeIndex) Lookup(p string) (folder.Record, bool) {
	r, ok := x.v.index[p]
	if !ok {
		return folder.Record{}, false
	}
	return folder.Record{Path: p, Kind: folder.KindFile, Size: int64(r.Size), MTime: r.MTime, Inode: r.Inode, Ctime: r.Ctime,
		Mode: fs.FileMode(r.Mode).Perm(), Hash: r.Hash}, true
}

func (x fakeIndex) Range(prefix string, fn func(folder.Record) bool) {
	for p := range x.v.index {
		r, _ := x.Lookup(p)
		if !fn(r) {
			return
		}
	}
}

func (v *fakeVault) Folder() string                                          { return "/f" }
func (v *fakeVault) Log() *slog.Logger                                       { return slog.New(slog.DiscardHandler) }
func (v *fakeVault) Applier() *folder.Applier                                { return v.applier }
func (v *fakeVault) KeepBeforeReplace(vaultdb.Record, bool)                  {}
func (v *fakeVault) KeepSole(entry.VersionID, func(cid.Cid) ([]byte, error)) {}
func (v *fakeVault) Now() time.Time                                          { return time.Unix(0, 1e18) }
func (v *fakeVault) Wrote(int64)                                             {}
func (v *fakeVault) Decided(string)                                          {}
func (v *fakeVault) Publish(e api.Event)                                     { v.events = append(v.events, string(e.Type)+" "+e.Path) }
func (v *fakeVault) Index(p string) (vaultdb.Record, bool)                   { r, ok := v.index[p]; return r, ok }
func (v *fakeVault) Body(id protocol.VersionID) entry.Version                { return v.bodies[id] }
func (v *fakeVault) SealLocal(cid.Cid, []byte) ([]byte, bool, error)         { return nil, false, nil }

func (v *fakeVault) WithInline(_ protocol.VersionID, ver entry.Version) (entry.Version, error) {
	return ver, nil
}

func (v *fakeVault) Content(_ context.Context, ver entry.Version) (io.Reader, func()) {
	return bytes.NewReader(ver.Inline), func() {}
}

func (v *fakeVault) Hash(_ context.Context, _ string, b []byte) ([32]byte, []byte, []entry.ChunkRef, error) {
	return blake3.Sum256(b), bytes.Clone(b), nil, nil
}

func (v *fakeVault) HoldScans() func() {
	if v.held {
		v.t.Fatal("scans held twice")
	}
	v.held = true
	return func() { v.held = false }
}

func (v *fakeVault) Scan(_ context.Context, paths []string) error {
	if v.held {
		v.t.Error("a scan ran while scans were held")
	}
	v.scanned = append(v.scanned, paths)
	return nil
}

func (v *fakeVault) CommitIndex(p string, rec vaultdb.Record) error {
	v.index[p] = rec
	return nil
}

func (v *fakeVault) RecordResolution(p string, _ protocol.Decision, _ entry.Version, copies []Copy, records []vaultdb.Record) error {
	v.resolutions = append(v.resolutions, slices.Clone(records))
	v.heldAtRecord = append(v.heldAtRecord, v.held)
	v.index[p] = records[0]
	for i, c := range copies {
		v.index[c.Ver.Path] = records[i+1]
	}
	return nil
}

var (
	local  = protocol.VersionID{Author: keys.DeviceID{1}, Seq: 1}
	remote = protocol.VersionID{Author: keys.DeviceID{2}, Seq: 1}
)

// conflict is a decision at a.md between this device's local (copied
// aside) and a peer's remote (the winner).
func conflict(v *fakeVault, still func() bool) Decided {
	cur := v.put("a.md", local, "mine")
	win := v.body("a.md", remote, "theirs")
	cp := cur
	cp.Path = "a.conflict-1.md"
	dec := protocol.Decision{Path: "a.md", Outcome: protocol.OutcomeConflict,
		Winner:     protocol.Version{ID: remote, Path: "a.md", Kind: protocol.KindFile},
		Copies:     []protocol.ConflictCopy{{Version: protocol.Version{ID: local, Path: "a.md", Kind: protocol.KindFile}, Path: cp.Path}},
		Superseded: []protocol.VersionID{local, remote}}
	rec := v.index["a.md"]
	return Decided{Path: "a.md", Dec: dec, Winner: win, Copies: []Copy{{Ver: cp}}, Cur: rec, Had: true, Still: still}
}

// A conflict writes the loser's copy first, then the winner, and records
// the resolution with both records while scans are still held.
func TestOutCopiesFirstThenWinnerThenRecord(t *testing.T) {
	v := newFake(t)
	d := conflict(v, func() bool {
		if !v.held {
			t.Error("the stamp was checked without scans held")
		}
		return true
	})
	if err := Out(context.Background(), v, d); err != nil {
		t.Fatal(err)
	}
	want := []string{"file-applied a.conflict-1.md", "conflict a.conflict-1.md", "file-applied a.md"}
	if !slices.Equal(v.events, want) {
		t.Errorf("events %q, want %q", v.events, want)
	}
	if got := v.read("a.md"); got != "theirs" {
		t.Errorf("a.md holds %q, want the winner", got)
	}
	if got := v.read("a.conflict-1.md"); got != "mine" {
		t.Errorf("the copy holds %q, want the loser", got)
	}
	if len(v.resolutions) != 1 || len(v.resolutions[0]) != 2 || !v.heldAtRecord[0] {
		t.Fatalf("resolutions %+v, held at record %v: want one, of 2 records, with scans held", v.resolutions, v.heldAtRecord)
	}
	if r := v.resolutions[0]; r[0].Version != remote || r[0].Hash != blake3.Sum256([]byte("theirs")) || r[1].Hash != blake3.Sum256([]byte("mine")) {
		t.Errorf("records %+v", r)
	}
	if v.held {
		t.Error("scans still held after the carry-out")
	}
}

// A decision a scan made stale writes nothing and says so, and releases
// the scans.
func TestOutStaleWritesNothing(t *testing.T) {
	v := newFake(t)
	d := conflict(v, func() bool { return false })
	err := Out(context.Background(), v, d)
	if !errors.Is(err, ErrDecisionStale) {
		t.Fatalf("err %v, want ErrDecisionStale", err)
	}
	if len(v.events) != 0 || len(v.resolutions) != 0 || v.read("a.md") != "mine" {
		t.Errorf("a stale decision wrote: events %q, resolutions %d, a.md %q", v.events, len(v.resolutions), v.read("a.md"))
	}
	if _, err := v.fs.Lstat("a.conflict-1.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a stale decision wrote its copy: %v", err)
	}
	if v.held {
		t.Error("scans still held")
	}
}

// A file the user changed since its scan is not overwritten: the path is
// scanned, after the scans are released, and the error says why.
func TestOutLocalEditIsScannedNotOverwritten(t *testing.T) {
	v := newFake(t)
	v.put("a.md", local, "mine")
	rec := v.index["a.md"]
	// The user's save, unknown to the index.
	f, err := v.fs.CreateTemp("", "edit-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "my new words"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := v.fs.Rename(f.Path(), "a.md"); err != nil {
		t.Fatal(err)
	}
	win := v.body("a.md", remote, "theirs")
	dec := protocol.Decision{Path: "a.md", Outcome: protocol.OutcomeSingle,
		Winner: protocol.Version{ID: remote, Path: "a.md", Kind: protocol.KindFile}, Superseded: []protocol.VersionID{remote}}
	err = Out(context.Background(), v, Decided{Path: "a.md", Dec: dec, Winner: win, Cur: rec, Had: true, Still: func() bool { return true }})
	if !errors.Is(err, folder.ErrLocalChange) {
		t.Fatalf("err %v, want folder.ErrLocalChange", err)
	}
	if got := v.read("a.md"); got != "my new words" {
		t.Errorf("a.md holds %q: the user's edit was overwritten", got)
	}
	if len(v.scanned) != 1 || !slices.Equal(v.scanned[0], []string{"a.md"}) {
		t.Errorf("scans %q, want one of a.md", v.scanned)
	}
}

// Only a decision that writes an inline winner and nothing else, which
// the folder does not hold yet, goes into the small-file batch.
func TestBatchable(t *testing.T) {
	file := entry.Version{Path: "a.md", Kind: entry.KindFile, Hash: [32]byte{1}, Inline: []byte("x")}
	one := protocol.Decision{Winner: protocol.Version{ID: remote}, Superseded: []protocol.VersionID{remote}}
	chunked := file
	chunked.Chunks = []entry.ChunkRef{{Size: 1}}
	two := one
	two.Superseded = []protocol.VersionID{local, remote}
	for _, c := range []struct {
		name string
		d    Decided
		want bool
	}{
		{"inline winner, new path", Decided{Dec: one, Winner: file}, true},
		{"inline winner over other content", Decided{Dec: one, Winner: file, Had: true, Cur: vaultdb.Record{Version: local, Hash: [32]byte{2}}}, true},
		{"the folder holds the winner", Decided{Dec: one, Winner: file, Had: true, Cur: vaultdb.Record{Version: remote}}, false},
		{"the folder holds its content", Decided{Dec: one, Winner: file, Had: true, Cur: vaultdb.Record{Version: local, Hash: [32]byte{1}}}, false},
		{"chunked", Decided{Dec: one, Winner: chunked}, false},
		{"records a resolution", Decided{Dec: two, Winner: file}, false},
	} {
		if got := c.d.Batchable(); got != c.want {
			t.Errorf("%s: batchable %v, want %v", c.name, got, c.want)
		}
	}
}
