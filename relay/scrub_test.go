package relay

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/pack"
)

// flipChunk flips a byte in the middle of chunk c's record in the pack
// files of the fixture's replica, as rot on the relay's disk would.
func (f *vaultFixture) flipChunk(c cid.Cid) {
	f.t.Helper()
	data := f.chunks[c]
	packs, err := filepath.Glob(filepath.Join(f.home, "replicas", "*", "chunks", "packs", "*.pack"))
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.t.Fatal(err)
		}
		i := bytes.Index(b, data)
		if i < 0 {
			continue
		}
		fh, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			f.t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteAt([]byte{b[i+len(data)/2] ^ 0x10}, int64(i+len(data)/2)); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	f.t.Fatalf("chunk %s is in no pack", c)
}

func (f *vaultFixture) held() map[keys.DeviceID]uint64 { return f.rep.heldVector() }

func (f *vaultFixture) wants(c cid.Cid) bool {
	return slices.ContainsFunc(f.rep.wantList(1<<20), c.Equals)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestScrubLowersHeldUntilRefetched: a chunk corrupted on the relay's disk
// and found by the scrub stops counting: the author's held prefix goes
// back to before the first entry that needs it, the log streams are
// woken, the relay wants the chunk, GC keeps wanting it, and once the
// chunk is put again the prefix is back. The same holds for a chunk found
// by a read while serving, for a pass over a stopped relay's home, and a
// chunk only a superseded version needs lowers nothing.
func TestScrubLowersHeldUntilRefetched(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	f.rep.stats = newStats()
	vp := f.write(f.a, histStart, f.file("p", nil, "a1"))
	f.write(f.a, histStart.Add(time.Minute), f.file("q", nil, "b1", "b2"))
	f.write(f.a, histStart.Add(2*time.Minute), f.file("r", nil, "c1"))
	f.write(f.b, histStart.Add(3*time.Minute), f.file("s", nil, "d1"))
	f.deliver()
	a, b := f.a.ID(), f.b.ID()
	want := map[keys.DeviceID]uint64{a: 3, b: 1}
	if got := f.held(); !mapsEqual(got, want) {
		t.Fatalf("held before any rot: got %v, want %v", got, want)
	}

	// Found by the scrub.
	grown := f.rep.growthSignal()
	b1 := f.chunk("b1")
	f.flipChunk(b1)
	res, err := f.rep.chunks.ScrubPass(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Corrupt) != 1 || !res.Corrupt[0].Equals(b1) {
		t.Fatalf("scrub found %v, want [%s]", res.Corrupt, b1)
	}
	if got, want := f.held(), map[keys.DeviceID]uint64{a: 1, b: 1}; !mapsEqual(got, want) {
		t.Errorf("held after the scrub quarantined b1: got %v, want %v", got, want)
	}
	if !isClosed(grown) {
		t.Errorf("log streams not woken: devices would not see the lower held vector")
	}
	if !f.wants(b1) {
		t.Errorf("relay does not want the quarantined chunk again")
	}
	if got := metricValue(t, f.rep.stats.scrubCorrupt); got != 1 {
		t.Errorf("scrub_corrupt_chunks_total: got %v, want 1", got)
	}
	if got := metricValue(t, f.rep.stats.chunksQuarantined); got != 1 {
		t.Errorf("chunks_quarantined_total: got %v, want 1", got)
	}
	// A collection meanwhile neither fails nor stops wanting it.
	f.collect(Retention{}, histStart.Add(400*oneDay))
	if !f.wants(b1) {
		t.Errorf("GC stopped wanting a quarantined chunk an unheld entry needs")
	}
	f.deliver()
	if got := f.held(); !mapsEqual(got, want) {
		t.Errorf("held after b1 was put again: got %v, want %v", got, want)
	}
	if ok := f.has(b1); !ok {
		t.Errorf("b1 not stored again")
	}
	if res, err := f.rep.chunks.ScrubPass(context.Background(), 0); err != nil || len(res.Corrupt) != 0 {
		t.Errorf("scrub after the repair: corrupt %v, %v; want none", res.Corrupt, err)
	}

	// Found by a read (a device asking for it).
	c1 := f.chunk("c1")
	f.flipChunk(c1)
	if _, err := f.rep.chunks.Get(c1); !errors.Is(err, pack.ErrCorrupt) {
		t.Fatalf("Get of a rotten chunk: got %v, want ErrCorrupt", err)
	}
	if got, want := f.held(), map[keys.DeviceID]uint64{a: 2, b: 1}; !mapsEqual(got, want) {
		t.Errorf("held after a read quarantined c1: got %v, want %v", got, want)
	}
	if got := metricValue(t, f.rep.stats.chunksQuarantined); got != 2 {
		t.Errorf("chunks_quarantined_total: got %v, want 2", got)
	}
	if got := metricValue(t, f.rep.stats.scrubCorrupt); got != 1 {
		t.Errorf("scrub_corrupt_chunks_total counts a read: got %v, want 1", got)
	}
	f.deliver()
	if got := f.held(); !mapsEqual(got, want) {
		t.Errorf("held after c1 was put again: got %v, want %v", got, want)
	}

	// A chunk only a superseded version needs: nothing held depends on
	// it, so the prefix stays; the relay still wants it back (the old
	// version is retained for restores).
	f.write(f.a, histStart.Add(4*time.Minute), f.file("p", vp, "a2"))
	f.deliver()
	want[a] = 4
	a1 := f.chunk("a1")
	f.flipChunk(a1)
	if _, err := f.rep.chunks.ScrubPass(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if got := f.held(); !mapsEqual(got, want) {
		t.Errorf("held after a superseded version's chunk rotted: got %v, want %v", got, want)
	}
	if !f.wants(a1) {
		t.Errorf("relay does not want a retained old version's chunk again")
	}
	f.deliver()

	// A stopped relay's home, scrubbed offline: the next start wants the
	// chunk and counts the prefix without it.
	d1 := f.chunk("d1")
	f.flipChunk(d1)
	f.rep.close()
	rep, err := ScrubHome(context.Background(), f.home, nil, slog.New(slog.DiscardHandler))
	if err != nil || rep.Err() != nil {
		t.Fatalf("ScrubHome: %v, %v", err, rep.Err())
	}
	if len(rep.Vaults) != 1 || len(rep.Vaults[0].Corrupt) != 1 || rep.Vaults[0].Corrupt[0] != d1.String() {
		t.Fatalf("ScrubHome report: got %+v, want d1 corrupt", rep.Vaults)
	}
	f.open(Quota{})
	if got, want := f.held(), map[keys.DeviceID]uint64{a: 4, b: 0}; !mapsEqual(got, want) {
		t.Errorf("held after restart without d1: got %v, want %v", got, want)
	}
	f.deliver()
	if got := f.held(); !mapsEqual(got, want) {
		t.Errorf("held after d1 was put again: got %v, want %v", got, want)
	}
}

// TestGCAbandonsPlanAfterHeldLowered: a collection whose plan predates a
// quarantine that lowered a prefix drops nothing and asks to run again.
func TestGCAbandonsPlanAfterHeldLowered(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	v1 := f.write(f.a, histStart, f.file("p", nil, "m1"))
	f.write(f.a, histStart.Add(time.Minute), f.file("p", v1, "m2"))
	f.deliver()
	m2 := f.chunk("m2")
	f.flipChunk(m2)
	// The quarantine lands while the scan runs: the first Range call of
	// the scan is after lowered was read, so lower it from a hook on the
	// context's Err, which the scan checks for every entry.
	ctx := &hookCtx{Context: context.Background(), once: func() {
		if _, err := f.rep.chunks.Get(m2); !errors.Is(err, pack.ErrCorrupt) {
			t.Errorf("Get: got %v, want ErrCorrupt", err)
		}
	}}
	res, err := f.rep.collect(ctx, Retention{KeepAll: -1, Daily: -1}, histStart.Add(400*oneDay))
	if !errors.Is(err, errQuarantined) {
		t.Fatalf("collect: got %v, want errQuarantined", err)
	}
	if res.Dropped != 0 || !f.has(f.chunk("m1")) {
		t.Errorf("abandoned collection dropped %d chunks (m1 there: %v)", res.Dropped, f.has(f.chunk("m1")))
	}
	select {
	case <-f.rep.gcKick:
	default:
		t.Errorf("abandoned collection did not ask to run again")
	}
	// With m2 back, m1 (superseded, expired) goes.
	f.deliver()
	if res := f.collect(Retention{KeepAll: -1, Daily: -1}, histStart.Add(400*oneDay)); res.Dropped != 1 {
		t.Errorf("next collection dropped %d, want 1 (m1)", res.Dropped)
	}
}

// hookCtx runs once the first time Err is asked.
type hookCtx struct {
	context.Context
	once func()
	done bool
}

func (c *hookCtx) Err() error {
	if !c.done {
		c.done = true
		c.once()
	}
	return c.Context.Err()
}

// TestScrubLoop: the relay's background scrub finds rot by itself, paced
// here to a pass every 50 ms, and the replica's prefix drops.
func TestScrubLoop(t *testing.T) {
	f := newVaultFixture(t, Quota{})
	f.write(f.a, histStart, f.file("p", nil, "a1", "a2"))
	f.deliver()
	r := &Relay{
		cfg: Config{Scrub: pack.ScrubPace{Budget: pack.Budget{Work: time.Hour, Per: time.Hour}, Period: 50 * time.Millisecond}},
		log: slog.New(slog.DiscardHandler), stats: newStats(),
		vaults: map[keys.VaultID]*replica{f.vault: f.rep},
	}
	f.rep.stats = r.stats
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() { r.scrubLoop(ctx); close(ended) }()
	defer func() { cancel(); <-ended }()
	waitUntil(t, "a first scrub pass", func() bool { _, ok, _ := f.rep.chunks.LastScrub(); return ok })
	f.flipChunk(f.chunk("a2"))
	waitUntil(t, "the held prefix to drop", func() bool { return f.held()[f.a.ID()] == 0 })
	if got := metricValue(t, r.stats.scrubCorrupt); got != 1 {
		t.Errorf("scrub_corrupt_chunks_total: got %v, want 1", got)
	}
	if got := metricValue(t, r.stats.scrubBytes); got <= 0 {
		t.Errorf("scrub_bytes_verified_total: got %v, want > 0", got)
	}
	f.deliver()
	if got := f.held()[f.a.ID()]; got != 1 {
		t.Errorf("held after the chunk was put again: got %d, want 1", got)
	}
}

func mapsEqual(a, b map[keys.DeviceID]uint64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}
