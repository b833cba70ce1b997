package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/store/pack"
)

// histStart is when the test vaults' histories start.
var histStart = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// vaultFixture is a replica of a two-device vault (A admin, B member) and
// the devices' log heads, so tests can write signed entries into it the
// way devices would and hand the relay their chunks.
type vaultFixture struct {
	t      testing.TB
	home   string
	vault  keys.VaultID
	ek     keys.EpochKeys
	a, b   *keys.Identity
	rep    *replica
	heads  map[keys.DeviceID]entry.Head
	chunks map[cid.Cid][]byte // every chunk written, by CID
	nonce  byte
}

func newVaultFixture(t testing.TB, quota Quota) *vaultFixture {
	t.Helper()
	a, err := keys.IdentityFromSeed(bytes.Repeat([]byte{0xa1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	b, err := keys.IdentityFromSeed(bytes.Repeat([]byte{0xb2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var root keys.RootSecret
	for i := range root {
		root[i] = byte(i * 7)
	}
	f := &vaultFixture{
		t: t, home: t.TempDir(), vault: root.Vault().ID, ek: root.Epoch0().Keys(0), a: a, b: b,
		heads: map[keys.DeviceID]entry.Head{}, chunks: map[cid.Cid][]byte{},
	}
	f.open(quota)
	gen := member.Genesis(a, root.VaultKey(), histStart.UnixMilli())
	st := member.NewState(f.vault)
	if err := st.Apply(gen); err != nil {
		t.Fatal(err)
	}
	add := st.Next(a, member.Record{Op: member.OpAdd, Device: b.ID(), Role: member.RoleMember}, histStart.UnixMilli())
	for _, rec := range []member.Record{gen, add} {
		if err := f.rep.addMember(rec); err != nil {
			t.Fatalf("adding membership record: %v", err)
		}
	}
	return f
}

// open (re)opens the replica, as a relay restart does.
func (f *vaultFixture) open(quota Quota) {
	f.t.Helper()
	rep, err := openReplica(f.home, f.vault, quota, PackChunks, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		f.t.Fatalf("openReplica: %v", err)
	}
	rep.gcGrace = -1 // chunks age by the injected clock, not the pack's
	f.rep = rep
	f.t.Cleanup(rep.close)
}

func (f *vaultFixture) reopen() {
	f.rep.close()
	f.open(f.rep.quota)
}

// chunk makes the encrypted chunk named s (random-looking bytes) and
// returns its CID.
func (f *vaultFixture) chunk(s string) cid.Cid {
	data := make([]byte, 3000)
	x := blake3.New(0, nil)
	x.Write([]byte(s))
	_, _ = x.XOF().Read(data)
	c, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: mh.BLAKE3, MhLength: 32}.Sum(data)
	if err != nil {
		f.t.Fatal(err)
	}
	f.chunks[c] = data
	return c
}

// file is a file version at path made of the named chunks.
func (f *vaultFixture) file(path string, sup []entry.VersionID, names ...string) entry.Version {
	v := entry.Version{Path: path, Kind: entry.KindFile, Mode: 0o644, MTime: 1, Supersedes: sup}
	for _, n := range names {
		v.Chunks = append(v.Chunks, entry.ChunkRef{CID: f.chunk(n), Size: 1000})
		v.Size += 1000
	}
	v.Hash = blake3.Sum256([]byte(fmt.Sprint(names)))
	return v
}

func deletionOf(path string, sup ...entry.VersionID) entry.Version {
	return entry.Version{Path: path, Kind: entry.KindDeletion, Supersedes: sup}
}

// write has id sign an entry with versions at time at and stores it in
// the replica; it returns the versions' IDs.
func (f *vaultFixture) write(id *keys.Identity, at time.Time, vs ...entry.Version) []entry.VersionID {
	f.t.Helper()
	e := f.build(id, at, vs...)
	if err := f.rep.ingestEntry(e.Bytes()); err != nil {
		f.t.Fatalf("ingestEntry: %v", err)
	}
	ids := make([]entry.VersionID, len(vs))
	for i := range vs {
		ids[i] = e.VersionID(i)
	}
	return ids
}

// build has id sign the next entry of its log, with versions at time at,
// and counts it written; the caller stores it.
func (f *vaultFixture) build(id *keys.Identity, at time.Time, vs ...entry.Version) *entry.Entry {
	f.t.Helper()
	prev := f.heads[id.ID()]
	f.nonce++
	e, err := entry.New(entry.Config{
		Identity: id, Vault: f.vault, Prev: prev, Clock: f.maxClock() + 1, Keys: f.ek,
		Time: at.UnixMilli(), Rand: bytes.NewReader(bytes.Repeat([]byte{f.nonce}, 24)),
	}, &entry.Body{Versions: vs})
	if err != nil {
		f.t.Fatalf("entry.New: %v", err)
	}
	f.heads[id.ID()] = e.Head()
	return e
}

func (f *vaultFixture) maxClock() uint64 {
	var m uint64
	for _, h := range f.heads {
		m = max(m, h.Clock)
	}
	return m
}

// deliver hands the relay every chunk it wants that the devices wrote,
// except those named in skip, as the fetch loop would.
func (f *vaultFixture) deliver(skip ...cid.Cid) {
	f.t.Helper()
	for _, c := range f.rep.wantList(1 << 20) {
		if containsCID(c, skip) {
			continue
		}
		if err := f.rep.putChunk(c, f.chunks[c]); err != nil {
			f.t.Fatalf("putChunk: %v", err)
		}
	}
	f.rep.settle()
}

func containsCID(c cid.Cid, cs []cid.Cid) bool {
	for _, x := range cs {
		if x.Equals(c) {
			return true
		}
	}
	return false
}

func (f *vaultFixture) has(c cid.Cid) bool {
	ok, err := f.rep.chunks.Has(c)
	if err != nil {
		f.t.Fatalf("Has: %v", err)
	}
	return ok
}

func (f *vaultFixture) collect(pol Retention, now time.Time) gcResult {
	f.t.Helper()
	res, err := f.rep.collect(context.Background(), pol, now)
	if err != nil {
		f.t.Fatalf("collect: %v", err)
	}
	return res
}

// checkConverges is what a device that was offline longer than the
// retention needs: every stored entry's version that nothing stored
// supersedes (a head) has every chunk in the store (for one that lists
// pieces, every piece and every chunk they list), and every entry in the
// held vector is still held in full.
func (f *vaultFixture) checkConverges() {
	f.t.Helper()
	superseded := map[entry.VersionID]bool{}
	var all []*entry.Entry
	for a, h := range f.rep.db.Heads() {
		err := f.rep.db.Range(a, 1, h.Seq, func(e *entry.Entry) error {
			all = append(all, e)
			for _, hd := range e.Headers() {
				for _, s := range hd.Supersedes {
					superseded[s] = true
				}
			}
			return nil
		})
		if err != nil {
			f.t.Fatal(err)
		}
	}
	held := f.rep.heldVector()
	for _, e := range all {
		for i, hd := range e.Headers() {
			if superseded[e.VersionID(i)] || e.Seq() > held[e.Author()] {
				continue
			}
			for _, c := range hd.Refs {
				if !f.has(c) {
					f.t.Errorf("head %v (held) references chunk %s, which the store lacks", e.VersionID(i), c)
					continue
				}
				if !entry.IsPieceCID(c) {
					continue
				}
				refs, err := entry.DecodePiece(c, f.chunks[c])
				if err != nil {
					f.t.Fatalf("piece %s the fixture wrote: %v", c, err)
				}
				for _, r := range refs {
					if !f.has(r.CID) {
						f.t.Errorf("head %v (held) lists in piece %s chunk %s, which the store lacks", e.VersionID(i), c, r.CID)
					}
				}
			}
		}
	}
}

// TestGCCollectsExpiredKeepsHeads follows one vault's history through
// collections at growing ages: nothing goes while retention keeps it;
// superseded versions go as they expire; every head's chunks and the held
// vector survive every collection.
func TestGCCollectsExpiredKeepsHeads(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	A, B := f.a, f.b
	// f.md: v1 -> v1b (30 min later) -> v2 (1 h) on day 0, v3 by B on day 2.
	v1 := f.write(A, histStart, f.file("f.md", nil, "c1"))
	v1b := f.write(A, histStart.Add(30*time.Minute), f.file("f.md", v1, "c2"))
	v2 := f.write(A, histStart.Add(time.Hour), f.file("f.md", v1b, "c2", "c3"))
	f.write(B, histStart.Add(2*oneDay), f.file("f.md", v2, "c4"))
	// g.bin by B, never changed; h.bin by A, deleted on day 0.
	f.write(B, histStart, f.file("g.bin", nil, "c5"))
	h1 := f.write(A, histStart, f.file("h.bin", nil, "c6"))
	f.write(A, histStart.Add(2*time.Hour), deletionOf("h.bin", h1...))
	f.deliver()
	heldBefore := f.rep.heldVector()
	if got, want := heldBefore[A.ID()], uint64(5); got != want {
		t.Fatalf("held of A before GC: got %d, want %d", got, want)
	}

	steps := []struct {
		name    string
		at      time.Time
		dropped int
		gone    []string
		kept    []string
	}{
		{"within KeepAll", histStart.Add(10 * oneDay), 0, nil, []string{"c1", "c2", "c3", "c4", "c5", "c6"}},
		{"daily: v1 loses oneDay 0 to v1b", histStart.Add(40 * oneDay), 1, []string{"c1"}, []string{"c2", "c3", "c4", "c5", "c6"}},
		{"after a year only heads", histStart.Add(400 * oneDay), 3, []string{"c1", "c2", "c3", "c6"}, []string{"c4", "c5"}},
		{"again: nothing left to drop", histStart.Add(800 * oneDay), 0, []string{"c1", "c2", "c3", "c6"}, []string{"c4", "c5"}},
	}
	for _, s := range steps {
		res := f.collect(Retention{}, s.at)
		t.Logf("%s: %+v", s.name, res)
		if res.Dropped != s.dropped {
			t.Errorf("%s: got %d chunks dropped, want %d", s.name, res.Dropped, s.dropped)
		}
		for _, n := range s.gone {
			if f.has(f.chunk(n)) {
				t.Errorf("%s: chunk %s still stored, want collected", s.name, n)
			}
		}
		for _, n := range s.kept {
			if !f.has(f.chunk(n)) {
				t.Errorf("%s: chunk %s collected, want kept", s.name, n)
			}
		}
		if d := cmp.Diff(heldBefore, f.rep.heldVector()); d != "" {
			t.Errorf("%s: held vector changed by GC (-before +after):\n%s", s.name, d)
		}
		f.checkConverges()
	}
	if got := f.rep.wanted.len(); got != 0 {
		t.Errorf("got %d chunks wanted after GC, want 0", got)
	}
	if res := f.collect(Retention{}, histStart.Add(900*oneDay)); res.Plan.Versions != 7 || res.Plan.Heads != 3 || res.Plan.Expired != 4 {
		t.Errorf("plan: got %+v, want 7 versions, 3 heads, 4 expired", res.Plan)
	}
}

// TestGCKeepsWhatUnheldEntriesNeed: an entry whose chunks have not all
// arrived is not held; the version it supersedes stays a head for
// retention, and its own chunks stay wanted, however old the times say
// they are.
func TestGCKeepsWhatUnheldEntriesNeed(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	x := f.write(f.b, histStart, f.file("x", nil, "c8"))
	f.deliver()
	f.write(f.b, histStart.Add(time.Hour), f.file("x", x, "c9", "c8b"))
	f.deliver(f.chunk("c9")) // c9 never comes
	held := f.rep.heldVector()
	if got := held[f.b.ID()]; got != 1 {
		t.Fatalf("held of B: got %d, want 1 (entry 2 lacks c9)", got)
	}
	res := f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(1000*oneDay))
	if res.Dropped != 0 {
		t.Errorf("got %d chunks dropped, want 0", res.Dropped)
	}
	for _, n := range []string{"c8", "c8b"} {
		if !f.has(f.chunk(n)) {
			t.Errorf("chunk %s collected, want kept", n)
		}
	}
	if !f.rep.wanted.has(f.chunk("c9")) {
		t.Errorf("c9 no longer wanted after GC")
	}
	if d := cmp.Diff(held, f.rep.heldVector()); d != "" {
		t.Errorf("held vector changed by GC:\n%s", d)
	}
	// Once c9 arrives the entry is held, x expires at once under
	// heads-only retention, and c8 (x's alone) goes.
	if err := f.rep.putChunk(f.chunk("c9"), f.chunks[f.chunk("c9")]); err != nil {
		t.Fatal(err)
	}
	f.rep.settle()
	res = f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(1000*oneDay))
	if res.Dropped != 1 || f.has(f.chunk("c8")) || !f.has(f.chunk("c8b")) || !f.has(f.chunk("c9")) {
		t.Errorf("after c9 arrived: got %d dropped (c8 stored %v), want c8 dropped and c8b, c9 kept", res.Dropped, f.has(f.chunk("c8")))
	}
	f.checkConverges()
}

// TestGCRevertToCollectedContent: a new version that reuses a chunk GC
// already collected (a file put back as it was a year ago) wants the chunk
// again, and its entry is not held until the chunk is back.
func TestGCRevertToCollectedContent(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v1 := f.write(f.a, histStart, f.file("r", nil, "old"))
	v2 := f.write(f.a, histStart.Add(time.Hour), f.file("r", v1, "new"))
	f.deliver()
	if res := f.collect(Retention{}, histStart.Add(400*oneDay)); res.Dropped != 1 || f.has(f.chunk("old")) {
		t.Fatalf("got %d dropped, want the old chunk dropped", res.Dropped)
	}
	f.write(f.a, histStart.Add(400*oneDay), f.file("r", v2, "old"))
	if !f.rep.wanted.has(f.chunk("old")) {
		t.Fatalf("collected chunk reused by a new version is not wanted")
	}
	if got := f.rep.heldVector()[f.a.ID()]; got != 2 {
		t.Fatalf("held of A: got %d, want 2 until the chunk is back", got)
	}
	f.deliver()
	if got := f.rep.heldVector()[f.a.ID()]; got != 3 {
		t.Fatalf("held of A: got %d, want 3", got)
	}
	f.checkConverges()
}

// TestGCAfterRestart: a restarted relay notes the collected chunks of
// expired versions as missing; its first collection stops wanting them,
// and the held vector is the one before the restart.
func TestGCAfterRestart(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v1 := f.write(f.a, histStart, f.file("r", nil, "a1", "a2"))
	f.write(f.a, histStart.Add(time.Hour), f.file("r", v1, "b1"))
	f.deliver()
	if res := f.collect(Retention{}, histStart.Add(400*oneDay)); res.Dropped != 2 {
		t.Fatalf("got %d dropped, want 2", res.Dropped)
	}
	held := f.rep.heldVector()
	f.reopen()
	if d := cmp.Diff(held, f.rep.heldVector()); d != "" {
		t.Errorf("held vector changed by restart:\n%s", d)
	}
	res := f.collect(Retention{}, histStart.Add(400*oneDay))
	if res.Unwanted != 2 || f.rep.wanted.len() != 0 {
		t.Errorf("got %d chunks unwanted, %d still wanted; want 2, 0", res.Unwanted, f.rep.wanted.len())
	}
	f.checkConverges()
}

// TestGCFreesFullVault: a vault at its byte quota takes entries again
// once GC has reclaimed space.
func TestGCFreesFullVault(t *testing.T) {
	f := newVaultFixture(t, Quota{Bytes: 6000})
	v1 := f.write(f.a, histStart, f.file("r", nil, "q1"))
	f.write(f.a, histStart.Add(time.Hour), f.file("r", v1, "q2"))
	f.deliver() // 2 × 3000 bytes: at the quota
	f.nonce++
	e, err := entry.New(entry.Config{Identity: f.b, Vault: f.vault, Clock: f.maxClock() + 1, Keys: f.ek,
		Time: histStart.Add(2 * time.Hour).UnixMilli(), Rand: bytes.NewReader(bytes.Repeat([]byte{f.nonce}, 24))},
		&entry.Body{Versions: []entry.Version{f.file("s", nil, "q3")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rep.ingestEntry(e.Bytes()); !errors.Is(err, ErrQuota) {
		t.Fatalf("ingest at quota: got %v, want ErrQuota", err)
	}
	if !f.rep.status().Full {
		t.Fatalf("status not full at quota")
	}
	f.collect(Retention{}, histStart.Add(400*oneDay))
	if f.rep.status().Full {
		t.Errorf("status still full after GC reclaimed a chunk")
	}
	if err := f.rep.ingestEntry(e.Bytes()); err != nil {
		t.Errorf("ingest after GC: got %v, want nil", err)
	}
}

// TestGCEmptyLog: a chunk store with chunks and no entry to define the live
// set is not emptied.
func TestGCEmptyLog(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	c := f.chunk("stray")
	if err := f.rep.chunks.Put(c, f.chunks[c]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rep.collect(context.Background(), Retention{}, histStart); err == nil {
		t.Errorf("collect with no entries and a chunk: got nil error, want a refusal")
	}
	if !f.has(c) {
		t.Errorf("chunk collected with no log to define the live set")
	}
}

// TestGCConcurrentIngest runs collections while entries that reuse old
// chunks keep arriving and chunks are delivered, under -race; whatever
// the interleaving, every held head keeps its chunks.
func TestGCConcurrentIngest(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	for _, n := range names {
		f.chunk(n)
	}
	prev := map[string][]entry.VersionID{}
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := f.rep.collect(ctx, Retention{KeepAll: -1, Daily: -1}, histStart.Add(1000*oneDay)); err != nil && ctx.Err() == nil {
				t.Errorf("collect: %v", err)
			}
			runs.Add(1)
		}
	})
	for i := range 150 {
		path := fmt.Sprint("p", i%5)
		ids := f.write(f.a, histStart.Add(time.Duration(i)*time.Minute), f.file(path, prev[path], names[rng.IntN(len(names))], names[rng.IntN(len(names))]))
		prev[path] = ids
		if i%3 == 0 {
			f.deliver()
		}
	}
	f.deliver()
	cancel()
	wg.Wait()
	t.Logf("%d collections ran during the writes", runs.Load())
	f.deliver() // GC may have dropped chunks a later entry wanted again
	f.checkConverges()
	if got, want := f.rep.heldVector()[f.a.ID()], uint64(150); got != want {
		t.Errorf("held of A: got %d, want %d", got, want)
	}
}

// TestGCLoop runs a relay's GC loop with an injected clock: it collects at
// start, again when kicked, records the metrics, and ends with its
// context.
func TestGCLoop(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v1 := f.write(f.a, histStart, f.file("r", nil, "m1"))
	f.write(f.a, histStart.Add(time.Hour), f.file("r", v1, "m2"))
	f.deliver()
	now := histStart.Add(oneDay)
	var nowMu sync.Mutex
	done := make(chan gcResult)
	r := &Relay{
		cfg: Config{Now: func() time.Time { nowMu.Lock(); defer nowMu.Unlock(); return now }, GCInterval: 1000 * time.Hour},
		log: slog.New(slog.DiscardHandler), stats: newStats(),
	}
	r.afterGC = func(_ keys.VaultID, res gcResult, err error) {
		if err != nil {
			t.Errorf("GC: %v", err)
		}
		done <- res
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() { r.gcLoop(ctx, f.rep); close(ended) }()
	if res := <-done; res.Dropped != 0 {
		t.Errorf("first run: got %d dropped, want 0", res.Dropped)
	}
	nowMu.Lock()
	now = histStart.Add(400 * oneDay)
	nowMu.Unlock()
	f.rep.gcKick <- struct{}{}
	if res := <-done; res.Dropped != 1 {
		t.Errorf("kicked run: got %d dropped, want 1", res.Dropped)
	}
	cancel()
	<-ended
	if got := metricValue(t, r.stats.gcRuns); got != 2 {
		t.Errorf("gc_runs_total: got %v, want 2", got)
	}
	if got := metricValue(t, r.stats.gcChunks); got != 1 {
		t.Errorf("gc_chunks_reclaimed_total: got %v, want 1", got)
	}
	if got := metricValue(t, r.stats.gcBytes); got != 3000 {
		t.Errorf("gc_bytes_reclaimed_total: got %v, want 3000", got)
	}
	if got, want := metricValue(t, r.stats.gcLast), float64(histStart.Add(400*oneDay).Unix()); got != want {
		t.Errorf("gc_last_run_timestamp_seconds: got %v, want %v", got, want)
	}
}

// TestGCKickAfterLargeChange: many superseded versions start a collection.
func TestGCKickAfterLargeChange(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	f.collect(Retention{}, histStart) // drains the kick load may have left
	f.rep.mu.Lock()
	for range gcAfterSuperseded - 1 {
		f.rep.gcNoteLocked(entry.VersionHeader{Supersedes: []entry.VersionID{{Seq: 1}}})
	}
	f.rep.mu.Unlock()
	select {
	case <-f.rep.gcKick:
		t.Fatalf("kicked before %d superseded versions", gcAfterSuperseded)
	default:
	}
	f.rep.mu.Lock()
	f.rep.gcNoteLocked(entry.VersionHeader{Supersedes: []entry.VersionID{{Seq: 1}}})
	f.rep.mu.Unlock()
	select {
	case <-f.rep.gcKick:
	default:
		t.Fatalf("no kick after %d superseded versions", gcAfterSuperseded)
	}
}

// metricValue reads a counter's or gauge's value.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}

// TestGCGivesSpaceBack: with small packs, collecting most of a file's old
// versions rewrites the packs they filled and the bytes on disk fall;
// every head's chunk still reads back whole.
func TestGCGivesSpaceBack(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	if err := f.rep.chunks.Close(); err != nil {
		t.Fatal(err)
	}
	small, err := pack.Open(pack.Config{Dir: filepath.Join(f.rep.dir, "chunks"), PackSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	f.rep.chunks = small
	var prev []entry.VersionID
	for i := range 40 {
		prev = f.write(f.a, histStart.Add(time.Duration(i)*time.Minute), f.file("big", prev, fmt.Sprint("g", i)))
		f.deliver()
	}
	res := f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(oneDay))
	t.Logf("%+v", res)
	if res.Dropped != 39 || res.PacksRewritten == 0 || res.BytesOnDiskAfter >= res.BytesOnDiskBefore/2 {
		t.Errorf("got %d dropped, %d packs rewritten, %d -> %d bytes on disk; want 39 dropped, packs rewritten, less than half the bytes",
			res.Dropped, res.PacksRewritten, res.BytesOnDiskBefore, res.BytesOnDiskAfter)
	}
	last := f.chunk("g39")
	if got, err := f.rep.chunks.Get(last); err != nil || !bytes.Equal(got, f.chunks[last]) {
		t.Errorf("head chunk after rewrite: got %d bytes, err %v; want the chunk", len(got), err)
	}
	f.checkConverges()
}

// BenchmarkGCCollect measures one collection of a vault of 1,000 entries
// of 20 file versions each (20,000 versions, each superseding the path's
// previous one) over 200 shared chunks, under heads-only retention after
// the first run has dropped what expires.
func BenchmarkGCCollect(b *testing.B) {
	f := newVaultFixture(b, Quota{})
	prev := map[int][]entry.VersionID{}
	for i := range 1000 {
		vs := make([]entry.Version, 20)
		for p := range vs {
			vs[p] = f.file(fmt.Sprint("p", p), prev[p], fmt.Sprint("s", (i*20+p)%200))
		}
		ids := f.write(f.a, histStart.Add(time.Duration(i)*time.Minute), vs...)
		for p := range vs {
			prev[p] = ids[p : p+1]
		}
	}
	f.deliver()
	f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(oneDay))
	b.ResetTimer()
	for range b.N {
		f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(oneDay))
	}
}

// Fetchers storing chunks at once never take the vault past its byte
// quota: each reserves its bytes before the store (before, each passed the
// check on what was stored and several landed past it together).
func TestQuotaHoldsUnderConcurrentPuts(t *testing.T) {
	const quota = 20 * 3000 // room for 20 of the 3,000-byte chunks
	f := newVaultFixture(t, Quota{Bytes: quota})
	var names []string
	for i := range 64 {
		names = append(names, fmt.Sprint("q", i))
	}
	f.write(f.a, histStart, f.file("big.bin", nil, names...))
	want := f.rep.wantList(1 << 20)
	if len(want) != 64 {
		t.Fatalf("%d chunks wanted, want 64", len(want))
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(want); i += 8 {
				_ = f.rep.putChunk(want[i], f.chunks[want[i]]) // ErrQuota past the quota
			}
		})
	}
	wg.Wait()
	if got := f.rep.chunks.Stats().BytesStored; got > quota {
		t.Fatalf("the replica stores %d chunk bytes against a quota of %d", got, quota)
	}
	if st := f.rep.status(); !st.Full {
		t.Fatalf("status %+v, want full", st)
	}
}
