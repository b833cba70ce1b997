package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/carry"
	"github.com/weftsync/weft/node/engineloop"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/homefull"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// fakeVault is a vault over an in-memory folder: a real version graph and
// engine loop, an index kept in a map, bodies carrying their content
// inline, and a record of what was asked.
type fakeVault struct {
	t       *testing.T
	fs      *folder.MemFS
	applier *folder.Applier
	loop    *engineloop.Loop

	mu     sync.Mutex // the vault's lock: guards the fields below
	graph  *protocol.Graph
	bodies map[protocol.VersionID]entry.Version
	index  map[string]vaultdb.Record

	scansHeld   bool
	stopped     bool
	commits     int   // CommitIndexes calls that committed
	commitErr   error // what CommitIndexes fails with, when set
	reported    []string
	settled     []string
	resolutions int
	passes      int
	// decided, when set, runs after each decision (carry.Vault.Decided).
	decided func(path string)
}

func newFake(t *testing.T) *fakeVault {
	v := &fakeVault{t: t, fs: folder.NewMemFS(folder.MemFSConfig{}), graph: protocol.NewGraph(),
		bodies: map[protocol.VersionID]entry.Version{}, index: map[string]vaultdb.Record{},
		loop: engineloop.New(engine.Config{})}
	a, err := folder.NewApplier(folder.ApplierConfig{FS: v.fs, Index: fakeIndex{v}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	v.applier = a
	return v
}

var peer = keys.DeviceID{2}

// arrive folds in a peer's version of a file at p holding b, as the log
// handlers do: into the graph and bodies, the path touched in the engine.
func (v *fakeVault) arrive(p string, seq uint32, b string, supersedes ...protocol.VersionID) protocol.VersionID {
	v.t.Helper()
	id := protocol.VersionID{Author: peer, Seq: uint64(seq)}
	ver := entry.Version{Path: p, Kind: entry.KindFile, Size: uint64(len(b)), Hash: blake3.Sum256([]byte(b)),
		Inline: []byte(b), Mode: 0o644, MTime: 1e18, Supersedes: supersedes}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.graph.Add(engine.CoreVersion(id, uint64(seq), 1e18, ver)); err != nil {
		v.t.Fatal(err)
	}
	v.bodies[id] = ver
	v.loop.Touch(p)
	return id
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

// dirty is what the engine still has to decide, and its path errors.
func (v *fakeVault) dirty() (paths []string, errs map[string]string) {
	errs = map[string]string{}
	v.loop.Do(func(e *engine.Engine) {
		paths = e.DirtyPaths()
		e.Errs(func(p, err string) { errs[p] = err })
	})
	return paths, errs
}

type fakeIndex struct{ v *fakeVault }

func (x fakeIndex) Lookup(p string) (folder.Record, bool) {
	x.v.mu.Lock()
	defer x.v.mu.Unlock()
	r, ok := x.v.index[p]
	if !ok {
		return folder.Record{}, false
	}
	return folder.Record{Path: p, Kind: folder.KindFile, Size: int64(r.Size), MTime: r.MTime, Inode: r.Inode, Ctime: r.Ctime,
		Mode: fs.FileMode(r.Mode).Perm(), Hash: r.Hash}, true
}

func (x fakeIndex) Range(string, func(folder.Record) bool) {}

// The vault as carry and the pass see it.

func (v *fakeVault) Folder() string                                          { return "/f" }
func (v *fakeVault) Log() *slog.Logger                                       { return slog.New(slog.DiscardHandler) }
func (v *fakeVault) Applier() *folder.Applier                                { return v.applier }
func (v *fakeVault) KeepBeforeReplace(vaultdb.Record, bool)                  {}
func (v *fakeVault) KeepSole(entry.VersionID, func(cid.Cid) ([]byte, error)) {}
func (v *fakeVault) Now() time.Time                                          { return time.Unix(0, 1e18) }
func (v *fakeVault) Wrote(int64)                                             {}
func (v *fakeVault) Publish(api.Event)                                       {}
func (v *fakeVault) SealLocal(cid.Cid, []byte) ([]byte, bool, error)         { return nil, false, nil }
func (v *fakeVault) Took(time.Time)                                          {}
func (v *fakeVault) IncomingHeld(engine.IncomingVerdict)                     {}
func (v *fakeVault) RepairPieces(context.Context, string) error              { return nil }
func (v *fakeVault) Held() bool                                              { return false }
func (v *fakeVault) Reconciled()                                             { v.passes++ }
func (v *fakeVault) Stopped() bool                                           { return v.stopped }
func (v *fakeVault) Unsettled(p string, err error)                           { v.reported = append(v.reported, p) }
func (v *fakeVault) WithInline(_ protocol.VersionID, ver entry.Version) (entry.Version, error) {
	return ver, nil
}

func (v *fakeVault) Decided(p string) {
	if v.decided != nil {
		v.decided(p)
	}
}

func (v *fakeVault) Index(p string) (vaultdb.Record, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.index[p]
	return r, ok
}

func (v *fakeVault) Body(id protocol.VersionID) entry.Version {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bodies[id]
}

func (v *fakeVault) Content(_ context.Context, ver entry.Version) (io.Reader, func()) {
	return bytes.NewReader(ver.Inline), func() {}
}

func (v *fakeVault) Hash(_ context.Context, _ string, b []byte) ([32]byte, []byte, []entry.ChunkRef, error) {
	return blake3.Sum256(b), bytes.Clone(b), nil, nil
}

func (v *fakeVault) HoldScans() func() {
	if v.scansHeld {
		v.t.Fatal("scans held twice")
	}
	v.scansHeld = true
	return func() { v.scansHeld = false }
}

func (v *fakeVault) Scan(context.Context, []string) error {
	if v.scansHeld {
		v.t.Error("a scan ran while scans were held")
	}
	return nil
}

func (v *fakeVault) CommitIndex(p string, rec vaultdb.Record) error {
	return v.CommitIndexes(Indexed{p, rec})
}

func (v *fakeVault) CommitIndexes(recs ...Indexed) error {
	if v.commitErr != nil {
		return v.commitErr
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range recs {
		v.index[r.Path] = r.Rec
	}
	v.commits++
	return nil
}

func (v *fakeVault) RecordResolution(p string, _ protocol.Decision, _ entry.Version, copies []carry.Copy, records []vaultdb.Record) error {
	v.resolutions++
	v.mu.Lock()
	defer v.mu.Unlock()
	v.index[p] = records[0]
	for i, c := range copies {
		v.index[c.Ver.Path] = records[i+1]
	}
	return nil
}

func (v *fakeVault) Locked(f func(State)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f(fakeState{v})
}

type fakeState struct{ v *fakeVault }

func (s fakeState) Graph() *protocol.Graph { return s.v.graph }
func (s fakeState) View() engine.View      { return fakeView(s) }
func (s fakeState) PassBytes(int64)        {}
func (s fakeState) Settled(ps ...string)   { s.v.settled = append(s.v.settled, ps...) }

func (s fakeState) Body(id protocol.VersionID) (entry.Version, bool) {
	b, ok := s.v.bodies[id]
	return b, ok
}

func (s fakeState) Record(p string) (vaultdb.Record, bool) {
	r, ok := s.v.index[p]
	return r, ok
}

// fakeView is the graph and index as the engine reads them (under the
// fake's lock, held by Locked).
type fakeView struct{ v *fakeVault }

func (x fakeView) Graph() *protocol.Graph { return x.v.graph }
func (x fakeView) Files() int             { return len(x.v.index) }
func (x fakeView) DeletionConfirmed(string) bool {
	return false
}
func (x fakeView) WinnerIsDeletion(p string) bool { return engine.IsDeletion(x.v.graph, p) }

func (x fakeView) Lookup(p string) (engine.Disk, bool) {
	r, ok := x.v.index[p]
	if !ok {
		return engine.Disk{}, false
	}
	return engine.Disk{Version: r.Version, Kind: r.Kind, Mode: r.Mode, ContentHash: r.Hash}, true
}

// A pass writes small files in batches of smallBatch, one index commit
// each, in the log's order; every path settles and none stays dirty.
func TestPassBatchesSmallFiles(t *testing.T) {
	v := newFake(t)
	const n = 300 // batches of 256 and 44
	for i := range n {
		v.arrive(fmt.Sprintf("n/%03d.md", n-1-i), uint32(i+1), fmt.Sprintf("note %d", i))
	}
	r := New(v, v.loop, nil)
	r.Pass(context.Background())

	if v.commits != 2 {
		t.Errorf("%d index commits for %d small files, want 2 (batches of 256)", v.commits, n)
	}
	for i := range n {
		p := fmt.Sprintf("n/%03d.md", n-1-i)
		if got := v.read(p); got != fmt.Sprintf("note %d", i) {
			t.Fatalf("%s holds %q", p, got)
		}
	}
	if len(v.settled) != n || v.passes != 1 {
		t.Errorf("%d paths settled in %d passes, want %d in 1", len(v.settled), v.passes, n)
	}
	// Settled in log order (the seq order here), which is the reverse of
	// path order.
	if v.settled[0] != fmt.Sprintf("n/%03d.md", n-1) {
		t.Errorf("first settled %s, want the log's first", v.settled[0])
	}
	if dirty, errs := v.dirty(); len(dirty) != 0 || len(errs) != 0 {
		t.Errorf("after the pass: dirty %v, errors %v", dirty, errs)
	}
}

// A conflict is carried out alone, through carry: the resolution is
// recorded and the loser kept as a copy.
func TestPassCarriesConflictsAlone(t *testing.T) {
	v := newFake(t)
	mine := protocol.VersionID{Author: keys.DeviceID{1}, Seq: 1}
	body := entry.Version{Path: "a.md", Kind: entry.KindFile, Size: 4, Hash: blake3.Sum256([]byte("mine")), Inline: []byte("mine"), Mode: 0o644, MTime: 1e18}
	rec, err := carry.Version(context.Background(), v, mine, body, vaultdb.Record{}, false)
	if err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	if err := v.graph.Add(engine.CoreVersion(mine, 1, 1e18, body)); err != nil {
		t.Fatal(err)
	}
	v.bodies[mine] = body
	v.index["a.md"] = rec
	v.mu.Unlock()
	v.arrive("a.md", 1, "theirs") // concurrent: supersedes nothing

	New(v, v.loop, nil).Pass(context.Background())
	if v.resolutions != 1 || v.commits != 0 {
		t.Fatalf("%d resolutions recorded and %d batch commits, want the conflict recorded alone", v.resolutions, v.commits)
	}
	v.mu.Lock()
	n := len(v.index)
	v.mu.Unlock()
	if n != 2 {
		t.Errorf("the index holds %d paths, want the winner and its conflict copy", n)
	}
	if dirty, errs := v.dirty(); len(dirty) != 0 || len(errs) != 0 {
		t.Errorf("after the pass: dirty %v, errors %v", dirty, errs)
	}
}

// A decision made stale by a scan recording a local edit between the
// decision and the write writes nothing; the path is decided again at
// once, on the state the scan left, and carried out. Here the batch's
// decision and the first one made alone go stale, and the third is
// carried out.
func TestPassDecidesStaleAgain(t *testing.T) {
	v := newFake(t)
	v.arrive("a.md", 1, "theirs")
	decisions := 0
	v.decided = func(p string) {
		decisions++
		if decisions <= 2 {
			// A scan records a file written at a.md meanwhile.
			b := fmt.Sprintf("edit %d", decisions)
			edit := entry.Version{Path: p, Kind: entry.KindFile, Size: uint64(len(b)), Hash: blake3.Sum256([]byte(b)), Inline: []byte(b), Mode: 0o644, MTime: 1e18}
			cur, had := v.Index(p)
			rec, err := carry.Version(context.Background(), v, protocol.VersionID{Author: keys.DeviceID{1}, Seq: uint64(decisions)}, edit, cur, had)
			if err != nil {
				t.Fatal(err)
			}
			v.mu.Lock()
			v.index[p] = rec
			v.mu.Unlock()
		}
	}
	New(v, v.loop, nil).Pass(context.Background())
	if decisions != 3 {
		t.Fatalf("a.md decided %d times, want 3 (each stale decision made again)", decisions)
	}
	if got := v.read("a.md"); got != "theirs" {
		t.Errorf("a.md holds %q", got)
	}
	if len(v.reported) != 0 {
		t.Errorf("a stale decision was reported to the user: %v", v.reported)
	}
}

// A batch whose index commit fails leaves every path dirty: a full home
// disk as a wait (no path error, nothing reported), another failure as
// each path's error.
func TestPassCommitFailureLeavesPathsDirty(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		wantErrs bool
	}{
		{"home full", fmt.Errorf("recording: %w", homefull.ErrFull), false},
		{"other", errors.New("the database is closed"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newFake(t)
			v.arrive("a.md", 1, "a")
			v.arrive("b.md", 2, "b")
			v.commitErr = tc.err
			New(v, v.loop, nil).Pass(context.Background())
			dirty, errs := v.dirty()
			if !slices.Equal(dirty, []string{"a.md", "b.md"}) {
				t.Errorf("dirty %v, want both paths", dirty)
			}
			if (len(errs) == 2) != tc.wantErrs || (len(errs) != 0 && len(errs) != 2) {
				t.Errorf("path errors %v, want them: %v", errs, tc.wantErrs)
			}
			if len(v.settled) != 0 {
				t.Errorf("settled %v after a failed commit", v.settled)
			}
		})
	}
}

// A stopped folder runs no pass, and a cancelled pass carries nothing
// out: the paths stay dirty for the next.
func TestPassWaits(t *testing.T) {
	v := newFake(t)
	v.arrive("a.md", 1, "a")
	v.stopped = true
	New(v, v.loop, nil).Pass(context.Background())
	if dirty, _ := v.dirty(); len(dirty) != 1 || v.passes != 0 {
		t.Fatalf("a stopped folder: dirty %v, %d passes", dirty, v.passes)
	}
	v.stopped = false
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	New(v, v.loop, nil).Pass(ctx)
	if dirty, errs := v.dirty(); len(dirty) != 1 || len(errs) != 0 || !strings.HasPrefix(v.read("a.md"), "<") {
		t.Fatalf("a cancelled pass: dirty %v, errors %v, a.md %q", dirty, errs, v.read("a.md"))
	}
}

// Run runs a pass when kicked, after ready is closed, and returns when
// its context ends.
func TestRunPassesOnKick(t *testing.T) {
	v := newFake(t)
	kicked := make(chan struct{}, 1)
	ready := make(chan struct{})
	r := New(v, v.loop, kicked)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx, ready); close(stopped) }()
	go v.loop.Run(ctx)

	v.arrive("a.md", 1, "a")
	close(ready)
	kicked <- struct{}{}
	for {
		if dirty, _ := v.dirty(); len(dirty) == 0 {
			break
		}
		select {
		case kicked <- struct{}{}:
		case <-time.After(10 * time.Second): // a bound on a hang, not a wait for an event
			t.Fatal("no pass ran after a kick")
		}
	}
	cancel()
	<-stopped
	if got := v.read("a.md"); got != "a" {
		t.Errorf("a.md holds %q", got)
	}
}
