package keeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// fakeVault holds versions, the folder's chunks and its peers' chunks.
type fakeVault struct {
	mu       sync.Mutex
	versions map[entry.VersionID]entry.Version
	folder   map[cid.Cid][]byte // chunks a folder file holds now
	peers    map[cid.Cid][]byte
	current  []entry.VersionID
	bytes    int64
	free     int64
}

func (f *fakeVault) Version(id entry.VersionID) (entry.Version, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.versions[id]
	return v, ok
}
func (f *fakeVault) FolderBytes() int64 { return f.bytes }
func (f *fakeVault) Current(fn func(entry.VersionID)) {
	for _, id := range f.current {
		fn(id)
	}
}
func (f *fakeVault) Envelope(c cid.Cid) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.folder[c]; ok {
		return b, nil
	}
	return nil, errors.New("no file holds it")
}
func (f *fakeVault) Fetch(_ context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	for _, c := range cids {
		if b, ok := f.peers[c]; ok {
			if err := got(c, b); err != nil {
				return err
			}
		}
	}
	return nil
}
func (f *fakeVault) DiskFree() int64 { return f.free }

// version adds a file version of n chunks to f's folder and returns it.
func (f *fakeVault) version(seq uint64, path string, n int) entry.VersionID {
	id := entry.VersionID{Author: keys.DeviceID{1}, Seq: seq}
	v := entry.Version{Path: path, Kind: entry.KindFile}
	for i := range n {
		b := fmt.Appendf(nil, "%s chunk %d of version %d", path, i, seq)
		c := chunk.SumCID(b)
		f.folder[c] = b
		v.Chunks = append(v.Chunks, entry.ChunkRef{CID: c, Size: uint32(len(b))})
		v.Size += uint64(len(b))
	}
	f.versions[id] = v
	return id
}

func newFake() *fakeVault {
	return &fakeVault{versions: map[entry.VersionID]entry.Version{}, folder: map[cid.Cid][]byte{}, peers: map[cid.Cid][]byte{}, bytes: 1 << 30}
}

func open(t *testing.T, f *fakeVault) *Keeper {
	t.Helper()
	k := Open(Config{Dir: t.TempDir(), Folder: "/f", Vault: f, Policy: api.VersionPolicy{Budget: 1 << 20}})
	if !k.Available() {
		t.Fatal("the version store did not open")
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// A version kept before it is replaced can be read back chunk by chunk
// after the folder no longer holds it; one whose content is gone is
// skipped, not failed; Info counts both.
func TestKeepBeforeReplace(t *testing.T) {
	f := newFake()
	k := open(t, f)
	id := f.version(1, "a.bin", 3)
	k.KeepBeforeReplace(vaultdb.Record{Version: id, Kind: entry.KindFile, Chunks: f.versions[id].Chunks}, true)
	ver := f.versions[id]
	clear(f.folder) // the file was replaced
	for _, c := range ver.Chunks {
		if !k.Has(c.CID) {
			t.Fatalf("chunk %s not kept", c.CID)
		}
		if _, err := k.Envelope(c.CID); err != nil {
			t.Fatal(err)
		}
	}
	gone := f.version(2, "b.bin", 2)
	clear(f.folder)
	k.KeepNow(Job{ID: gone})
	info := k.Info()
	if info.Kept != 1 || info.Skipped != 1 || info.Failed != 0 || !info.Available || info.Versions != 1 {
		t.Fatalf("info %+v: want 1 kept, 1 skipped (content gone), 1 version", info)
	}
	if _, err := k.Envelope(chunk.SumCID([]byte("never kept"))); !errors.Is(err, ErrNotKept) {
		t.Fatalf("a chunk never kept: %v, want ErrNotKept", err)
	}
}

// The policy decides: a version over a quarter of the budget is not kept,
// nor a fresh one (it replaced nothing) past the budget, nor anything when
// the disk is nearly full.
func TestKeepPolicy(t *testing.T) {
	f := newFake()
	k := open(t, f)
	k.SetPolicy(api.VersionPolicy{Budget: 200})
	big := f.version(1, "big.bin", 3) // about 90 bytes: over a quarter of 200
	k.KeepNow(Job{ID: big})
	f.free = LowDisk - 1
	small := f.version(2, "s.bin", 1)
	k.KeepNow(Job{ID: small})
	if info := k.Info(); info.Kept != 0 || info.Skipped != 2 {
		t.Fatalf("info %+v: want both skipped", info)
	}
	f.free = 0 // unknown: no limit
	k.KeepNow(Job{ID: small})
	if info := k.Info(); info.Kept != 1 {
		t.Fatalf("info %+v: want the small version kept once the disk has room", info)
	}
}

// KeepSole keeps from the caller's bytes, not the folder, and past the
// budget (a merge whose only copy they are); a disk short of space still
// keeps it out.
func TestKeepSole(t *testing.T) {
	f := newFake()
	k := open(t, f)
	k.SetPolicy(api.VersionPolicy{Budget: 200})
	id := f.version(1, "merged.md", 3) // about 90 bytes: over a quarter of 200
	held := maps.Clone(f.folder)
	clear(f.folder) // an editor's save replaced the file
	fromMemory := func(c cid.Cid) ([]byte, error) {
		if b, ok := held[c]; ok {
			return b, nil
		}
		return nil, errors.New("not in the merge")
	}
	f.free = LowDisk - 1
	k.KeepSole(id, fromMemory)
	if info := k.Info(); info.Kept != 0 || info.Skipped != 1 {
		t.Fatalf("info %+v: want it skipped on a nearly full disk", info)
	}
	f.free = 0
	k.KeepSole(id, fromMemory)
	if info := k.Info(); info.Kept != 1 {
		t.Fatalf("info %+v: want it kept past the budget", info)
	}
	for _, c := range f.versions[id].Chunks {
		if _, err := k.Envelope(c.CID); err != nil {
			t.Fatalf("chunk %s of the kept merge: %v", c.CID, err)
		}
	}
}

// JobFor: only a chunked file version new at its path is a job; fresh
// when it replaced no file.
func TestJobFor(t *testing.T) {
	id := func(s uint64) entry.VersionID { return entry.VersionID{Author: keys.DeviceID{1}, Seq: s} }
	chunked := []entry.ChunkRef{{CID: chunk.SumCID([]byte("x")), Size: 1}}
	file := func(s uint64) vaultdb.Record {
		return vaultdb.Record{Version: id(s), Kind: entry.KindFile, Chunks: chunked}
	}
	if j, ok := JobFor(vaultdb.Record{}, false, file(1)); !ok || !j.Fresh || j.ID != id(1) {
		t.Errorf("a new file: %+v %v", j, ok)
	}
	if j, ok := JobFor(file(1), true, file(2)); !ok || j.Fresh {
		t.Errorf("a replaced file: %+v %v", j, ok)
	}
	if _, ok := JobFor(file(2), true, file(2)); ok {
		t.Error("the same version again is a job")
	}
	if _, ok := JobFor(file(1), true, vaultdb.Record{Version: id(3), Kind: entry.KindFile}); ok {
		t.Error("an inline version is a job")
	}
}

// Run keeps what is queued (Flush waits for it); a prune thins a path's
// old versions to one a day but never drops the version the folder holds
// now; damaged chunks are fetched again from peers.
func TestRunQueueAndPrune(t *testing.T) {
	f := newFake()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	k := Open(Config{Dir: t.TempDir(), Vault: f, Policy: api.VersionPolicy{Budget: 1 << 20}, Now: clock})
	t.Cleanup(func() { _ = k.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	defer func() { cancel(); <-done }()
	older, newer := f.version(1, "a.bin", 2), f.version(2, "a.bin", 2)
	k.Enqueue(Job{ID: older})
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clockMu.Lock()
	now = now.Add(time.Second)
	clockMu.Unlock()
	k.Enqueue(Job{ID: newer})
	if err := k.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if info := k.Info(); info.Kept != 2 || info.Versions != 2 {
		t.Fatalf("info %+v: want 2 kept", info)
	}
	clockMu.Lock()
	now = now.Add(40 * 24 * time.Hour) // past the keep-all window: one a day per path
	clockMu.Unlock()
	f.current = []entry.VersionID{older} // the user restored the older one
	if res, err := k.Prune(ctx); err != nil || res.Retained != 2 {
		t.Fatalf("prune with the older version current: %+v, %v; want both retained", res, err)
	}
	f.current = nil
	if res, err := k.Prune(ctx); err != nil || res.Retained != 1 || res.Dropped != 1 {
		t.Fatalf("prune with neither current: %+v, %v; want the day's newest only", res, err)
	}
	c := f.versions[older].Chunks[0].CID
	f.peers[c] = f.folder[c]
	if left := k.repair(ctx, []cid.Cid{c, chunk.SumCID([]byte("nobody has it"))}); len(left) != 1 || !k.Has(c) {
		t.Fatalf("repair: %d left, have the fetched chunk %v; want 1 left and it stored", len(left), k.Has(c))
	}
}
