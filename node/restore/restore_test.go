package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/content"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/history"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// emptyIndex is a folder that recorded nothing: the applier may create
// any path that does not exist.
type emptyIndex struct{}

func (emptyIndex) Lookup(string) (folder.Record, bool)    { return folder.Record{}, false }
func (emptyIndex) Range(string, func(folder.Record) bool) {}

// fakeVault is a Vault over a real folder with an empty index, whose
// history, peers and log are maps.
type fakeVault struct {
	t         *testing.T
	dir       string
	applier   *folder.Applier
	items     []history.Item
	unsettled map[string]bool
	changed   map[string]string  // path -> "unsettled" or "modified", as the check scan finds it
	peers     map[cid.Cid][]byte // what the connected peers send
	held      bool               // Record: authoring held
	self      entry.VersionID

	mu       sync.Mutex
	locks    int // LockScans minus UnlockScans
	gen      int // LockScans so far
	checked  int // gen when the folder was checked
	recorded []string
}

func newFakeVault(t *testing.T, items ...history.Item) *fakeVault {
	dir := t.TempDir()
	fsys, err := folder.OpenOS(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := folder.NewApplier(folder.ApplierConfig{FS: fsys, Index: emptyIndex{}})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeVault{t: t, dir: dir, applier: a, items: items, unsettled: map[string]bool{}, changed: map[string]string{}, peers: map[cid.Cid][]byte{}}
}

func (f *fakeVault) Folder() string { return f.dir }
func (f *fakeVault) LockScans()     { f.mu.Lock(); f.locks++; f.gen++; f.mu.Unlock() }
func (f *fakeVault) UnlockScans()   { f.mu.Lock(); f.locks--; f.mu.Unlock() }
func (f *fakeVault) PlanOne(string, string, int64) ([]history.Item, error) {
	return append([]history.Item(nil), f.items...), nil
}
func (f *fakeVault) PlanAll(string, int64) ([]history.Item, error) { return f.PlanOne("", "", 0) }
func (f *fakeVault) Settled(p string) bool                         { return !f.unsettled[p] }

// mustHold fails the test unless the vault's scans are held, and held
// since the check (what is "check"): from the check to the record, a scan
// would record the restored files without their supersedes.
func (f *fakeVault) mustHold(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locks != 1 {
		f.t.Errorf("%s with the scans held %d times, want once", what, f.locks)
	}
	if what == "check" {
		f.checked = f.gen
	} else if f.gen != f.checked {
		f.t.Errorf("%s: the scans were released and taken again since the check", what)
	}
}

func (f *fakeVault) ScanPaths(_ context.Context, paths []string) (folder.Result, error) {
	f.mustHold("check")
	var r folder.Result
	for _, p := range paths {
		switch f.changed[p] {
		case "unsettled":
			r.Unsettled = append(r.Unsettled, p)
		case "modified":
			r.Changes = append(r.Changes, folder.Change{Type: folder.Modified, Path: p})
		}
	}
	return r, nil
}
func (f *fakeVault) Where() history.Where { return noWhere{} }
func (f *fakeVault) Fetch(_ context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	missing := 0
	for _, c := range cids {
		b, ok := f.peers[c]
		if !ok {
			missing++
			continue
		}
		if err := got(c, b); err != nil {
			return err
		}
	}
	if missing > 0 {
		return fmt.Errorf("%w (%d chunks)", content.ErrChunkMissing, missing)
	}
	return nil
}
func (f *fakeVault) Local(cid.Cid) ([]byte, error) { return nil, errors.New("no local file") }
func (f *fakeVault) Stream(context.Context, entry.Version) (io.Reader, func()) {
	f.t.Fatal("streamed: the content fits the cache")
	return nil, nil
}
func (f *fakeVault) Full(_ entry.VersionID, v entry.Version) (entry.Version, error) { return v, nil }
func (f *fakeVault) Applier() *folder.Applier                                       { return f.applier }
func (f *fakeVault) TopNewAncestor(p string) string                                 { return p }
func (f *fakeVault) Record(_ context.Context, paths []string) (bool, error) {
	f.mustHold("recording")
	f.recorded = append(f.recorded, paths...)
	return f.held, nil
}
func (f *fakeVault) OwnHead(string) (entry.VersionID, bool) { return f.self, true }

// noWhere: no chunk is local, and a device is connected.
type noWhere struct{}

func (noWhere) InFolder(cid.Cid) bool    { return false }
func (noWhere) Kept(cid.Cid) bool        { return false }
func (noWhere) Reach() (dev, relay bool) { return true, false }

func chunkCID(t *testing.T, b string) cid.Cid {
	h, err := mh.Sum([]byte(b), mh.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

// fileItem is an item restoring path to a file version of the given
// chunks, each chunk sent by the peers unless missing.
func fileItem(t *testing.T, f *fakeVault, path string, chunks []string, missing bool) history.Item {
	ver := entry.Version{Path: path, Kind: entry.KindFile, Mode: 0o644}
	for _, c := range chunks {
		id := chunkCID(t, path+c)
		ver.Chunks = append(ver.Chunks, entry.ChunkRef{CID: id, Size: uint32(len(c))})
		ver.Size += uint64(len(c))
		if !missing {
			f.peers[id] = []byte(c)
		}
	}
	return history.Item{Path: path, From: &history.Version{ID: entry.VersionID{Author: keys.DeviceID{1}, Seq: 1}, Ver: ver}}
}

func run(t *testing.T, f *fakeVault, req api.RestoreRequest) (api.RestoreResult, error) {
	t.Helper()
	res, err := Run(context.Background(), req, time.Time{}, []Target{{Vault: f, Path: "a"}}, func() time.Time { return time.Unix(1_800_000_000, 0) })
	if f.locks != 0 {
		t.Fatalf("scans left locked %d times", f.locks)
	}
	return res, err
}

func TestRestoreWritesFetchedContentAndRecordsIt(t *testing.T) {
	f := newFakeVault(t)
	f.items = []history.Item{fileItem(t, f, "a.txt", []string{"abc", "def"}, false)}
	f.self = entry.VersionID{Author: keys.DeviceID{2}, Seq: 7}
	res, err := run(t, f, api.RestoreRequest{Path: "a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(f.dir, "a.txt"))
	if err != nil || string(got) != "abcdef" {
		t.Fatalf("a.txt: %q, %v; want abcdef", got, err)
	}
	if len(f.recorded) != 1 || f.recorded[0] != "a.txt" {
		t.Fatalf("recorded %v, want [a.txt]", f.recorded)
	}
	if len(res.Changes) != 1 || res.Changes[0].Version != history.IDString(f.self) || res.Changes[0].Unrecorded {
		t.Fatalf("changes %+v, want a.txt recorded as %s", res.Changes, history.IDString(f.self))
	}
}

func TestRestoreWritesNothingWhenAnyPathFails(t *testing.T) {
	f := newFakeVault(t)
	f.items = []history.Item{
		fileItem(t, f, "ok.txt", []string{"fine"}, false),
		fileItem(t, f, "syncing.txt", []string{"x"}, false),
		fileItem(t, f, "edited.txt", []string{"y"}, false),
		fileItem(t, f, "busy.txt", []string{"z"}, false),
		fileItem(t, f, "gone.txt", []string{"p", "q"}, true),
	}
	f.unsettled["syncing.txt"] = true
	f.changed["edited.txt"] = "modified"
	f.changed["busy.txt"] = "unsettled"
	res, err := run(t, f, api.RestoreRequest{Path: "a"})
	if !errors.Is(err, history.ErrNotSettled) && !errors.Is(err, history.ErrChangedSinceScan) && !errors.Is(err, history.ErrContentUnavailable) {
		t.Fatalf("err %v, want a restore failure class", err)
	}
	codes := map[string]string{}
	for _, fl := range res.Failed {
		codes[fl.Path] = fl.Code
	}
	want := map[string]string{"syncing.txt": history.FailSyncing, "edited.txt": history.FailChanged, "busy.txt": history.FailChanged, "gone.txt": history.FailUnavailable}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("failures %v, want %v", codes, want)
	}
	for _, fl := range res.Failed {
		if fl.Path == "gone.txt" && !strings.Contains(fl.Reason, "2 of its 2 chunks") {
			t.Fatalf("gone.txt: %q, want the count of missing chunks", fl.Reason)
		}
	}
	if ents, _ := os.ReadDir(f.dir); len(ents) != 0 || len(f.recorded) != 0 {
		t.Fatalf("wrote %d entries and recorded %v, want nothing", len(ents), f.recorded)
	}

	// --partial restores what can be.
	res, err = run(t, f, api.RestoreRequest{Path: "a", Partial: true})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Path != "ok.txt" {
		t.Fatalf("partial: %+v, %v; want ok.txt restored", res.Changes, err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "ok.txt")); string(got) != "fine" {
		t.Fatalf("ok.txt: %q", got)
	}
}

func TestRestoreDryRunChangesNothing(t *testing.T) {
	f := newFakeVault(t)
	f.items = []history.Item{fileItem(t, f, "a.txt", []string{"abc"}, false)}
	res, err := run(t, f, api.RestoreRequest{Path: "a.txt", DryRun: true})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Action != "restore" {
		t.Fatalf("dry run: %+v, %v; want one restore listed", res.Changes, err)
	}
	if ents, _ := os.ReadDir(f.dir); len(ents) != 0 || len(f.recorded) != 0 {
		t.Fatalf("a dry run wrote %d entries and recorded %v", len(ents), f.recorded)
	}
}

func TestRestoreWhileAuthoringHeldIsUnrecorded(t *testing.T) {
	f := newFakeVault(t)
	f.items = []history.Item{fileItem(t, f, "a.txt", []string{"abc"}, false)}
	f.held = true
	res, err := run(t, f, api.RestoreRequest{Path: "a.txt"})
	if err != nil || len(res.Changes) != 1 || !res.Changes[0].Unrecorded || res.Changes[0].Version != "" {
		t.Fatalf("%+v, %v; want a.txt written, unrecorded, no version", res.Changes, err)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "a.txt")); string(got) != "abc" {
		t.Fatalf("a.txt: %q", got)
	}
}
