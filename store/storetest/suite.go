package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
	_ "github.com/multiformats/go-multihash/register/blake3" // chunk CIDs use BLAKE3-256

	"github.com/weftsync/weft/store/chunkstore"
)

// Run runs the conformance suite: one subtest per check, each on a fresh
// Backend from newBackend and a store opened with a fixed clock (Now) and
// a recording OnQuarantine. A Backend should make its units small (tens
// of KiB): the checks that need chunks in several units put chunks, ten
// per session, until there are at least two. Run checks:
//
//   - RoundTrip: chunks of 1 byte, about 2 KiB and 1 MiB are stored and
//     read back (Has, Get); a second Put of the same chunk is fine and is
//     counted once; an unknown CID is not found (Has false, ErrNotFound).
//   - Rejects: a Put whose bytes do not hash to the CID fails with
//     ErrCIDMismatch, one of more than chunkstore.MaxChunkSize bytes with
//     ErrTooLarge, and neither stores anything.
//   - Closed: every call after Close returns ErrClosed (a second Close
//     may also return nil).
//   - Persistence: what was put is there after Close and Open, and
//     Stats().Chunks and BytesStored count it, before and after.
//   - ConcurrentPuts: 16 goroutines putting 50 chunks each (and one chunk
//     all of them put) read back at once, after, and after a reopen.
//   - CorruptRead: a byte flipped in a chunk's stored data makes Get
//     return ErrCorrupt and no bytes, quarantines the chunk (Has false,
//     ErrNotFound, Stats().Corrupt, OnQuarantine with FoundByRead); the
//     other chunks still read; a Put of the good bytes stores it again,
//     durably.
//   - ScrubCorrupt: ScrubPass finds a flipped byte (Corrupt, Checked,
//     PassDone, LastScrub at the store's clock, Has false, OnQuarantine
//     with FoundByScrub); a second pass is clean once the chunk is put
//     again.
//   - ScrubSteps: ScrubStep with a tiny budget progresses over several
//     steps, checks every chunk once and ends the pass (LastScrub).
//   - GC: with half of about 40 chunks (in more than one unit) live and
//     no grace, GC drops exactly the dead ones, keeps the live ones
//     (also after a reopen), and gives back space: Stats, GCResult and
//     the units' bytes fall (if a backend deletes rewritten units only
//     after a delay of its own, a second GC once the clock has moved a
//     month must have deleted them). The live set may yield duplicates and
//     CIDs the store does not hold.
//   - GCGrace: an empty live set on a non-empty store is refused with
//     ErrEmptyLiveSet, a Before hook's error aborts the run, and the
//     default grace period keeps everything, all with nothing dropped;
//     once the clock passes the grace period the dead chunks go, except
//     one whose Put renewed its age; AllowEmptyLiveSet drops everything,
//     and an empty store takes an empty live set.
//   - UnindexedData: data written after the index was last saved (the
//     index directory is put back as it was before) is indexed again at
//     Open.
//   - MissingUnitFirst, MissingUnitLast: with a unit gone, Open succeeds,
//     its chunks are neither had nor served (ErrNotFound), others are, and
//     they can be put again. OnQuarantine, if told, is told by FoundByOpen.
//   - TruncatedUnit: a unit cut in the middle of its last record: Open
//     succeeds, the torn chunk is not served, the earlier ones are, and a
//     Put of the torn chunk stores it again, durably.
//   - LostIndex: with the index directory gone, Open rebuilds it from the
//     units; a record damaged on disk is not brought back.
//   - GarbageUnitSameSize, GarbageUnitShort: a unit overwritten with bytes
//     that are no record at all does not stop Open, its chunks are not
//     served, the others are, and its chunks can be put again.
//   - Destroy: every data unit and the index are gone, calls after it say
//     ErrClosed, and the store opens again empty.
func Run(t *testing.T, newBackend NewBackend) {
	tests := []struct {
		name string
		fn   func(e *env)
	}{
		{"RoundTrip", testRoundTrip},
		{"Rejects", testRejects},
		{"Closed", testClosed},
		{"Persistence", testPersistence},
		{"ConcurrentPuts", testConcurrentPuts},
		{"CorruptRead", testCorruptRead},
		{"ScrubCorrupt", testScrubCorrupt},
		{"ScrubSteps", testScrubSteps},
		{"GC", testGC},
		{"GCGrace", testGCGrace},
		{"UnindexedData", testUnindexedData},
		{"MissingUnitFirst", func(e *env) { testMissingUnit(e, false) }},
		{"MissingUnitLast", func(e *env) { testMissingUnit(e, true) }},
		{"TruncatedUnit", testTruncatedUnit},
		{"LostIndex", testLostIndex},
		{"GarbageUnitSameSize", func(e *env) { testGarbageUnit(e, false) }},
		{"GarbageUnitShort", func(e *env) { testGarbageUnit(e, true) }},
		{"Destroy", testDestroy},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(newEnv(t, newBackend(t), uint64(i+1)))
		})
	}
}

// epoch is the stores' clock until a test moves it: whole seconds, so that
// a backend keeping seconds loses nothing.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// quarantineLog records what OnQuarantine was told.
type quarantineLog struct {
	mu  sync.Mutex
	got []told
}

type told struct {
	c  cid.Cid
	by chunkstore.FoundBy
}

func (q *quarantineLog) record(cs []cid.Cid, by chunkstore.FoundBy) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range cs {
		q.got = append(q.got, told{c, by})
	}
}

// take returns what was told since the last take.
func (q *quarantineLog) take() []told {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.got
	q.got = nil
	return out
}

// env is one subtest's backend, clock, quarantine log and data source.
type env struct {
	t     *testing.T
	b     Backend
	clock *clock
	q     *quarantineLog
	rng   *rand.Rand
}

func newEnv(t *testing.T, b Backend, seed uint64) *env {
	e := &env{t: t, b: b, clock: &clock{}, q: &quarantineLog{}, rng: rand.New(rand.NewPCG(seed, 0x77656674))}
	e.clock.ns.Store(epoch.UnixNano())
	return e
}

// open opens the store over the backend's storage.
func (e *env) open() chunkstore.Store {
	e.t.Helper()
	s := e.b.Open(e.t, Options{OnQuarantine: e.q.record, Now: e.clock.Now})
	if s == nil {
		e.t.Fatal("Backend.Open returned a nil store")
	}
	// Tests close their stores; this closes one a failed test left open
	// (a second Close is harmless).
	e.t.Cleanup(func() { s.Close() })
	return s
}

func (e *env) close(s chunkstore.Store) {
	e.t.Helper()
	if err := s.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
}

// chunk is a chunk and its CID.
type chunk struct {
	c    cid.Cid
	data []byte
}

// chunkCID names data the way weft names chunks: CIDv1, raw codec,
// BLAKE3-256.
func chunkCID(t testing.TB, data []byte) cid.Cid {
	t.Helper()
	c, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.BLAKE3, MhLength: 32}.Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newChunk returns a chunk of n pseudo-random bytes from rng.
func newChunk(t testing.TB, rng *rand.Rand, n int) chunk {
	data := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	return chunk{chunkCID(t, data), data}
}

func (e *env) chunk(n int) chunk { return newChunk(e.t, e.rng, n) }

func (e *env) chunks(count, n int) []chunk {
	out := make([]chunk, count)
	for i := range out {
		out[i] = e.chunk(n)
	}
	return out
}

func mustPut(t testing.TB, s chunkstore.Store, chs ...chunk) {
	t.Helper()
	for _, ch := range chs {
		if err := s.Put(ch.c, ch.data); err != nil {
			t.Fatalf("Put(%s, %d bytes): %v", ch.c, len(ch.data), err)
		}
	}
}

// mustHave checks that every chunk of chs is had and read back intact.
func mustHave(t testing.TB, s chunkstore.Store, chs ...chunk) {
	t.Helper()
	for _, ch := range chs {
		if ok, err := s.Has(ch.c); !ok || err != nil {
			t.Fatalf("Has(%s): got %v, %v; want true, nil", ch.c, ok, err)
		}
		got, err := s.Get(ch.c)
		if err != nil || !bytes.Equal(got, ch.data) {
			t.Fatalf("Get(%s): got %d bytes, %v; want its %d bytes", ch.c, len(got), err, len(ch.data))
		}
	}
}

// mustBeGone checks that no chunk of chs is had, and Get says ErrNotFound.
func mustBeGone(t testing.TB, s chunkstore.Store, chs ...chunk) {
	t.Helper()
	for _, ch := range chs {
		if ok, err := s.Has(ch.c); ok || err != nil {
			t.Fatalf("Has(%s): got %v, %v; want false, nil", ch.c, ok, err)
		}
		if got, err := s.Get(ch.c); got != nil || !errors.Is(err, chunkstore.ErrNotFound) {
			t.Fatalf("Get(%s): got %d bytes, %v; want no bytes, ErrNotFound", ch.c, len(got), err)
		}
	}
}

// mustNotServe checks that Get returns no bytes of any chunk of chs but
// ErrNotFound or ErrCorrupt, and that Has then says false.
func mustNotServe(t testing.TB, s chunkstore.Store, chs ...chunk) {
	t.Helper()
	for _, ch := range chs {
		got, err := s.Get(ch.c)
		if got != nil || !(errors.Is(err, chunkstore.ErrNotFound) || errors.Is(err, chunkstore.ErrCorrupt)) {
			t.Fatalf("Get(%s) of a damaged chunk: got %d bytes, %v; want no bytes, ErrNotFound or ErrCorrupt", ch.c, len(got), err)
		}
		if ok, err := s.Has(ch.c); ok || err != nil {
			t.Fatalf("Has(%s) after Get found it damaged: got %v, %v; want false, nil", ch.c, ok, err)
		}
	}
}

// mustCount checks Stats().Chunks and BytesStored against chs.
func mustCount(t testing.TB, s chunkstore.Store, chs []chunk) {
	t.Helper()
	var n int64
	for _, ch := range chs {
		n += int64(len(ch.data))
	}
	st := s.Stats()
	if st.Chunks != int64(len(chs)) || st.BytesStored != n {
		t.Fatalf("Stats: %d chunks, %d bytes stored; want %d, %d", st.Chunks, st.BytesStored, len(chs), n)
	}
}

// without returns chs less the chunks of drop.
func without(chs []chunk, drop ...chunk) []chunk {
	return slices.DeleteFunc(slices.Clone(chs), func(ch chunk) bool {
		return slices.ContainsFunc(drop, func(d chunk) bool { return d.c.Equals(ch.c) })
	})
}

func cids(chs []chunk) []cid.Cid {
	out := make([]cid.Cid, len(chs))
	for i, ch := range chs {
		out[i] = ch.c
	}
	return out
}

// locate returns the unit that holds ch's record and the offset of its
// data there: the one place where ch's CID bytes are followed by its data.
// The store must be closed.
func (e *env) locate(ch chunk) (unit string, off int) {
	e.t.Helper()
	cb := ch.c.Bytes()
	found := 0
	for _, u := range e.b.Units(e.t) {
		b := e.b.ReadUnit(e.t, u)
		for i := 0; ; {
			j := bytes.Index(b[i:], cb)
			if j < 0 {
				break
			}
			at := i + j + len(cb)
			if bytes.HasPrefix(b[at:], ch.data) {
				unit, off = u, at
				found++
			}
			i += j + 1
		}
	}
	if found != 1 {
		e.t.Fatalf("chunk %s found in %d places in the units, want 1", ch.c, found)
	}
	return unit, off
}

// unitOf maps each unit to the chunks of chs it holds.
func (e *env) unitOf(chs []chunk) map[string][]chunk {
	e.t.Helper()
	m := make(map[string][]chunk)
	for _, ch := range chs {
		u, _ := e.locate(ch)
		m[u] = append(m[u], ch)
	}
	return m
}

// flip flips one byte of ch's stored data. The store must be closed.
func (e *env) flip(ch chunk) {
	e.t.Helper()
	u, off := e.locate(ch)
	b := e.b.ReadUnit(e.t, u)
	b[off+len(ch.data)/2] ^= 0x40
	e.b.WriteUnit(e.t, u, b)
}

// unitBytes is the size of all the units. The store must be closed.
func (e *env) unitBytes() int64 {
	e.t.Helper()
	var n int64
	for _, u := range e.b.Units(e.t) {
		n += int64(len(e.b.ReadUnit(e.t, u)))
	}
	return n
}

// fill puts at least count chunks of size bytes, ten per session (Close
// and Open in between), until the store has at least minUnits units. It
// returns the chunks with the store closed.
func (e *env) fill(count, size, minUnits int) []chunk {
	e.t.Helper()
	var chs []chunk
	for len(chs) < count || len(e.b.Units(e.t)) < minUnits {
		if len(chs) >= 20*count {
			e.t.Fatalf("%d chunks of %d bytes make only %d units, want %d: make the Backend's units smaller (tens of KiB)",
				len(chs), size, len(e.b.Units(e.t)), minUnits)
		}
		s := e.open()
		batch := e.chunks(10, size)
		mustPut(e.t, s, batch...)
		e.close(s)
		chs = append(chs, batch...)
	}
	return chs
}

// copyDir copies the directory tree src to dst, which must not exist.
func copyDir(t testing.TB, dst, src string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

func testRoundTrip(e *env) {
	t := e.t
	s := e.open()
	chs := []chunk{e.chunk(1), e.chunk(1900), e.chunk(2048), e.chunk(2200), e.chunk(1 << 20)}
	for _, ch := range chs {
		if ok, err := s.Has(ch.c); ok || err != nil {
			t.Fatalf("Has(%d-byte chunk) before Put: got %v, %v; want false, nil", len(ch.data), ok, err)
		}
		mustPut(t, s, ch)
		mustHave(t, s, ch)
	}
	mustHave(t, s, chs...)
	// A second Put of a chunk the store holds is fine and stores nothing
	// more.
	mustPut(t, s, chs...)
	mustHave(t, s, chs...)
	mustCount(t, s, chs)

	// Get hands out a fresh slice: changing it changes nothing stored.
	got, err := s.Get(chs[1].c)
	if err != nil {
		t.Fatal(err)
	}
	got[0] ^= 0xff
	mustHave(t, s, chs[1])

	unknown := e.chunk(100)
	if ok, err := s.Has(unknown.c); ok || err != nil {
		t.Errorf("Has(unknown): got %v, %v; want false, nil", ok, err)
	}
	if got, err := s.Get(unknown.c); got != nil || !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("Get(unknown): got %d bytes, %v; want no bytes, ErrNotFound", len(got), err)
	}
	e.close(s)
}

func testRejects(e *env) {
	t := e.t
	s := e.open()
	ch := e.chunk(100)
	bad := slices.Clone(ch.data)
	bad[50] ^= 1
	if err := s.Put(ch.c, bad); !errors.Is(err, chunkstore.ErrCIDMismatch) {
		t.Errorf("Put with bytes that do not match the CID: got %v, want ErrCIDMismatch", err)
	}
	if err := s.Put(ch.c, nil); !errors.Is(err, chunkstore.ErrCIDMismatch) {
		t.Errorf("Put with no bytes: got %v, want ErrCIDMismatch", err)
	}
	mustBeGone(t, s, ch)

	big := make([]byte, chunkstore.MaxChunkSize+1)
	bigc := chunkCID(t, big)
	if err := s.Put(bigc, big); !errors.Is(err, chunkstore.ErrTooLarge) {
		t.Errorf("Put of %d bytes: got %v, want ErrTooLarge", len(big), err)
	}
	mustBeGone(t, s, chunk{bigc, big})
	mustCount(t, s, nil)

	// The store still works.
	mustPut(t, s, ch)
	mustHave(t, s, ch)
	e.close(s)
}

func testClosed(e *env) {
	t := e.t
	s := e.open()
	ch := e.chunk(100)
	mustPut(t, s, ch)
	e.close(s)

	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, chunkstore.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", what, err)
		}
	}
	other := e.chunk(100)
	check("Put", s.Put(other.c, other.data))
	check("Put of a held chunk", s.Put(ch.c, ch.data))
	got, err := s.Get(ch.c)
	check("Get", err)
	if got != nil {
		t.Errorf("Get after Close returned %d bytes", len(got))
	}
	_, err = s.Has(ch.c)
	check("Has", err)
	_, err = s.GC(context.Background(), chunkstore.GCOptions{Live: slices.Values([]cid.Cid{ch.c}), Grace: -1})
	check("GC", err)
	_, err = s.ScrubStep(1 << 20)
	check("ScrubStep", err)
	_, err = s.ScrubPass(context.Background(), 0)
	check("ScrubPass", err)
	_, _, err = s.LastScrub()
	check("LastScrub", err)
	_ = s.Stats() // must not panic
	if err := s.Close(); err != nil && !errors.Is(err, chunkstore.ErrClosed) {
		t.Errorf("second Close: got %v, want nil or ErrClosed", err)
	}

	// The data is still there.
	s = e.open()
	mustHave(t, s, ch)
	e.close(s)
}

func testPersistence(e *env) {
	t := e.t
	s := e.open()
	chs := []chunk{e.chunk(1)}
	chs = append(chs, e.chunks(20, 2048)...)
	chs = append(chs, e.chunk(100_000), e.chunk(300_000))
	mustPut(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)

	s = e.open()
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	more := e.chunks(5, 3000)
	mustPut(t, s, more...)
	e.close(s)

	s = e.open()
	all := slices.Concat(chs, more)
	mustHave(t, s, all...)
	mustCount(t, s, all)
	e.close(s)
}

func testConcurrentPuts(e *env) {
	t := e.t
	const writers, each = 16, 50
	work := make([][]chunk, writers)
	for w := range work {
		rng := rand.New(rand.NewPCG(uint64(w), 99))
		for range each {
			work[w] = append(work[w], newChunk(t, rng, 64+rng.IntN(4000)))
		}
	}
	shared := e.chunk(5000) // put by every writer

	s := e.open()
	var wg sync.WaitGroup
	for w := range work {
		wg.Go(func() {
			for i, ch := range work[w] {
				if err := s.Put(ch.c, ch.data); err != nil {
					t.Errorf("writer %d: Put: %v", w, err)
					return
				}
				// Put returned: the chunk is there.
				if got, err := s.Get(ch.c); err != nil || !bytes.Equal(got, ch.data) {
					t.Errorf("writer %d: Get right after Put: got %d bytes, %v", w, len(got), err)
					return
				}
				if i == each/2 {
					if err := s.Put(shared.c, shared.data); err != nil {
						t.Errorf("writer %d: Put of the shared chunk: %v", w, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	all := []chunk{shared}
	for _, chs := range work {
		all = append(all, chs...)
	}
	mustHave(t, s, all...)
	mustCount(t, s, all)
	e.close(s)

	s = e.open()
	mustHave(t, s, all...)
	mustCount(t, s, all)
	e.close(s)
}

func testCorruptRead(e *env) {
	t := e.t
	s := e.open()
	chs := e.chunks(8, 3000)
	mustPut(t, s, chs...)
	e.close(s)
	x := chs[3]
	u, _ := e.locate(x)
	t.Logf("%d of %d chunks share the damaged chunk's unit", len(e.unitOf(chs)[u]), len(chs))
	e.flip(x)

	s = e.open()
	if got, err := s.Get(x.c); got != nil || !errors.Is(err, chunkstore.ErrCorrupt) {
		t.Fatalf("Get of a chunk with a flipped byte: got %d bytes, %v; want no bytes, ErrCorrupt", len(got), err)
	}
	if got := e.q.take(); len(got) != 1 || !got[0].c.Equals(x.c) || got[0].by != chunkstore.FoundByRead {
		t.Errorf("OnQuarantine told %v, want %s by %q", got, x.c, chunkstore.FoundByRead)
	}
	mustBeGone(t, s, x)
	if st := s.Stats(); st.Corrupt != 1 {
		t.Errorf("Stats().Corrupt: got %d, want 1", st.Corrupt)
	}
	rest := without(chs, x)
	mustHave(t, s, rest...)
	mustCount(t, s, rest)

	// A Put of the good bytes stores it again, for good.
	mustPut(t, s, x)
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)
	s = e.open()
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	if got := e.q.take(); len(got) != 0 {
		t.Errorf("OnQuarantine told %v after the chunk was put again, want nothing", got)
	}
	e.close(s)
}

func testScrubCorrupt(e *env) {
	t := e.t
	ctx := context.Background()
	s := e.open()
	chs := e.chunks(12, 2500)
	mustPut(t, s, chs...)
	if _, ok, err := s.LastScrub(); ok || err != nil {
		t.Errorf("LastScrub before any pass: got %v, %v; want false, nil", ok, err)
	}
	e.close(s)
	x := chs[7]
	e.flip(x)

	s = e.open()
	res, err := s.ScrubPass(ctx, 0)
	if err != nil {
		t.Fatalf("ScrubPass: %v", err)
	}
	if !res.PassDone || res.Checked != len(chs) || len(res.Corrupt) != 1 || !res.Corrupt[0].Equals(x.c) {
		t.Errorf("ScrubPass: got done %v, %d checked, corrupt %v; want done, %d, [%s]", res.PassDone, res.Checked, res.Corrupt, len(chs), x.c)
	}
	if when, ok, err := s.LastScrub(); !ok || err != nil || !when.Equal(epoch) {
		t.Errorf("LastScrub after a pass: got %v, %v, %v; want %v, true, nil", when, ok, err, epoch)
	}
	if got := e.q.take(); len(got) != 1 || !got[0].c.Equals(x.c) || got[0].by != chunkstore.FoundByScrub {
		t.Errorf("OnQuarantine told %v, want %s by %q", got, x.c, chunkstore.FoundByScrub)
	}
	mustBeGone(t, s, x)
	if st := s.Stats(); st.Corrupt != 1 {
		t.Errorf("Stats().Corrupt: got %d, want 1", st.Corrupt)
	}
	rest := without(chs, x)
	mustHave(t, s, rest...)
	mustCount(t, s, rest)

	// Put again, the chunk is served, and the next pass finds nothing.
	mustPut(t, s, x)
	mustHave(t, s, x)
	e.clock.advance(time.Hour)
	res, err = s.ScrubPass(ctx, 0)
	if err != nil || !res.PassDone || res.Checked != len(chs) || len(res.Corrupt) != 0 {
		t.Errorf("second ScrubPass: got done %v, %d checked, corrupt %v, %v; want done, %d, none, nil", res.PassDone, res.Checked, res.Corrupt, err, len(chs))
	}
	if when, ok, err := s.LastScrub(); !ok || err != nil || !when.Equal(epoch.Add(time.Hour)) {
		t.Errorf("LastScrub after the second pass: got %v, %v, %v; want %v, true, nil", when, ok, err, epoch.Add(time.Hour))
	}
	e.close(s)
	// LastScrub survives a reopen.
	s = e.open()
	if when, ok, err := s.LastScrub(); !ok || err != nil || !when.Equal(epoch.Add(time.Hour)) {
		t.Errorf("LastScrub after a reopen: got %v, %v, %v; want %v, true, nil", when, ok, err, epoch.Add(time.Hour))
	}
	e.close(s)
}

func testScrubSteps(e *env) {
	t := e.t
	chs := e.fill(20, 3000, 2)
	s := e.open()
	var total, steps int
	for {
		if steps > 2*len(chs)+2 {
			t.Fatalf("no end of the pass after %d steps (%d chunks checked of %d)", steps, total, len(chs))
		}
		res, err := s.ScrubStep(1)
		if err != nil {
			t.Fatalf("ScrubStep: %v", err)
		}
		steps++
		if len(res.Corrupt) != 0 {
			t.Errorf("ScrubStep found %v corrupt, want none", res.Corrupt)
		}
		if res.Checked == 0 && !res.PassDone {
			t.Fatalf("step %d made no progress", steps)
		}
		total += res.Checked
		if res.PassDone {
			break
		}
		if _, ok, err := s.LastScrub(); ok || err != nil {
			t.Fatalf("LastScrub in the middle of the first pass: got %v, %v; want false, nil", ok, err)
		}
	}
	if steps < 2 {
		t.Errorf("a pass over %d chunks in more than one unit took %d step of 1 byte, want several", len(chs), steps)
	}
	if total != len(chs) {
		t.Errorf("the steps checked %d chunks, want %d", total, len(chs))
	}
	if when, ok, err := s.LastScrub(); !ok || err != nil || !when.Equal(epoch) {
		t.Errorf("LastScrub after the pass: got %v, %v, %v; want %v, true, nil", when, ok, err, epoch)
	}
	mustHave(t, s, chs...)
	e.close(s)
}

// liveSeq yields every CID of chs twice, and CIDs of chunks the store
// does not hold, as a caller's live set may.
func (e *env) liveSeq(chs []chunk) iter.Seq[cid.Cid] {
	extra := cids(e.chunks(3, 64))
	return func(yield func(cid.Cid) bool) {
		for _, cs := range [][]cid.Cid{cids(chs), extra, cids(chs)} {
			for _, c := range cs {
				if !yield(c) {
					return
				}
			}
		}
	}
}

func split(chs []chunk) (live, dead []chunk) {
	for i, ch := range chs {
		if i%2 == 0 {
			live = append(live, ch)
		} else {
			dead = append(dead, ch)
		}
	}
	return live, dead
}

func testGC(e *env) {
	t := e.t
	ctx := context.Background()
	chs := e.fill(40, 4000, 2)
	units := e.b.Units(t)
	unitsBefore := e.unitBytes()
	live, dead := split(chs)
	t.Logf("%d chunks in %d units of %d bytes in all", len(chs), len(units), unitsBefore)

	s := e.open()
	before := s.Stats()
	if before.BytesOnDisk != unitsBefore {
		t.Errorf("Stats().BytesOnDisk: got %d, want %d (the units' size)", before.BytesOnDisk, unitsBefore)
	}
	res, err := s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live), Grace: -1})
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	t.Logf("GC: %+v", res)
	after := s.Stats()
	if res.Dropped != len(dead) {
		t.Errorf("GC dropped %d chunks, want %d", res.Dropped, len(dead))
	}
	if want := before.BytesStored - after.BytesStored; res.DroppedBytes != want {
		t.Errorf("GC dropped %d bytes, want %d (what Stats().BytesStored fell by)", res.DroppedBytes, want)
	}
	if res.Corrupt != 0 {
		t.Errorf("GC found %d corrupt, want 0", res.Corrupt)
	}
	mustBeGone(t, s, dead...)
	mustHave(t, s, live...)
	mustCount(t, s, live)

	if res.BytesOnDiskBefore != before.BytesOnDisk {
		t.Errorf("GCResult.BytesOnDiskBefore: got %d, want %d (Stats before)", res.BytesOnDiskBefore, before.BytesOnDisk)
	}
	diskAfter := res.BytesOnDiskAfter
	if diskAfter >= res.BytesOnDiskBefore {
		// A backend may delete what it rewrote only after a delay (a
		// reader may still be on its way to it): once the clock has moved
		// past any such delay, the next GC must have given the space back.
		t.Logf("GC did not give space back at once (%d -> %d bytes); trying again a month later", res.BytesOnDiskBefore, diskAfter)
		e.clock.advance(30 * 24 * time.Hour)
		res2, err := s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live), Grace: -1})
		if err != nil {
			t.Fatalf("second GC: %v", err)
		}
		t.Logf("second GC: %+v", res2)
		if res2.Dropped != 0 {
			t.Errorf("second GC dropped %d chunks, want 0", res2.Dropped)
		}
		diskAfter = res2.BytesOnDiskAfter
	}
	if diskAfter >= res.BytesOnDiskBefore {
		t.Errorf("bytes on disk went from %d to %d, want less (half the chunks are dead)", res.BytesOnDiskBefore, diskAfter)
	}
	if got := s.Stats().BytesOnDisk; got != diskAfter {
		t.Errorf("Stats().BytesOnDisk after GC: got %d, want %d (GCResult.BytesOnDiskAfter)", got, diskAfter)
	}
	mustHave(t, s, live...)
	e.close(s)

	if got := e.unitBytes(); got >= unitsBefore {
		t.Errorf("the units hold %d bytes after GC, want less than %d", got, unitsBefore)
	} else if got != diskAfter {
		t.Errorf("the units hold %d bytes after GC, the store said %d", got, diskAfter)
	}
	s = e.open()
	mustBeGone(t, s, dead...)
	mustHave(t, s, live...)
	mustCount(t, s, live)
	if got := s.Stats().BytesOnDisk; got != diskAfter {
		t.Errorf("Stats().BytesOnDisk after a reopen: got %d, want %d", got, diskAfter)
	}
	// The dead can come back.
	mustPut(t, s, dead...)
	mustHave(t, s, chs...)
	e.close(s)
}

func testGCGrace(e *env) {
	t := e.t
	ctx := context.Background()
	chs := e.fill(20, 2000, 1)
	live, dead := split(chs)
	s := e.open()
	unchanged := func(what string, res chunkstore.GCResult) {
		t.Helper()
		if res.Dropped != 0 {
			t.Errorf("%s: GC dropped %d chunks, want 0", what, res.Dropped)
		}
		mustHave(t, s, chs...)
		mustCount(t, s, chs)
	}

	res, err := s.GC(ctx, chunkstore.GCOptions{Live: slices.Values([]cid.Cid(nil)), Grace: -1})
	if !errors.Is(err, chunkstore.ErrEmptyLiveSet) {
		t.Errorf("GC with an empty live set: got %v, want ErrEmptyLiveSet", err)
	}
	unchanged("empty live set", res)

	errPlan := errors.New("the plan no longer holds")
	calls := 0
	res, err = s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live), Grace: -1, Before: func() error {
		calls++
		return errPlan
	}})
	if !errors.Is(err, errPlan) || calls != 1 {
		t.Errorf("GC whose Before fails: got %v after %d calls, want its error after 1", err, calls)
	}
	unchanged("Before failed", res)

	res, err = s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live)})
	if err != nil {
		t.Fatalf("GC with the default grace: %v", err)
	}
	unchanged("default grace", res)
	e.clock.advance(chunkstore.DefaultGCGrace - time.Minute)
	res, err = s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live)})
	if err != nil {
		t.Fatalf("GC with the default grace: %v", err)
	}
	unchanged("default grace, a minute short", res)
	res, err = s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live), Grace: 48 * time.Hour})
	if err != nil {
		t.Fatalf("GC with a grace of 48h: %v", err)
	}
	unchanged("grace of 48h", res)

	// Past the grace period the dead go, except one put again: a Put
	// renews a chunk's age.
	e.clock.advance(2 * time.Hour)
	renewed := dead[0]
	mustPut(t, s, renewed)
	res, err = s.GC(ctx, chunkstore.GCOptions{Live: e.liveSeq(live)})
	if err != nil {
		t.Fatalf("GC past the grace period: %v", err)
	}
	if res.Dropped != len(dead)-1 {
		t.Errorf("GC past the grace period dropped %d chunks, want %d", res.Dropped, len(dead)-1)
	}
	mustBeGone(t, s, dead[1:]...)
	kept := slices.Concat(live, []chunk{renewed})
	mustHave(t, s, kept...)
	mustCount(t, s, kept)

	// AllowEmptyLiveSet means it.
	res, err = s.GC(ctx, chunkstore.GCOptions{Live: slices.Values([]cid.Cid(nil)), Grace: -1, AllowEmptyLiveSet: true})
	if err != nil || res.Dropped != len(kept) {
		t.Errorf("GC with AllowEmptyLiveSet: dropped %d, %v; want %d, nil", res.Dropped, err, len(kept))
	}
	mustBeGone(t, s, chs...)
	mustCount(t, s, nil)
	// An empty store takes an empty live set.
	if res, err := s.GC(ctx, chunkstore.GCOptions{Live: slices.Values([]cid.Cid(nil)), Grace: -1}); err != nil || res.Dropped != 0 {
		t.Errorf("GC of an empty store with an empty live set: dropped %d, %v; want 0, nil", res.Dropped, err)
	}
	e.close(s)
	s = e.open()
	mustBeGone(t, s, chs...)
	mustCount(t, s, nil)
	e.close(s)
}

func testUnindexedData(e *env) {
	t := e.t
	s := e.open()
	a := e.chunks(3, 2000)
	mustPut(t, s, a...)
	e.close(s)
	saved := filepath.Join(t.TempDir(), "index")
	copyDir(t, saved, e.b.IndexDir)

	s = e.open()
	b := append(e.chunks(3, 2000), e.chunk(100_000), e.chunk(1000))
	mustPut(t, s, b...)
	e.close(s)

	// The index forgets b, as if the store had crashed after writing b's
	// data and before its index reached the disk.
	if err := os.RemoveAll(e.b.IndexDir); err != nil {
		t.Fatal(err)
	}
	copyDir(t, e.b.IndexDir, saved)

	all := slices.Concat(a, b)
	s = e.open()
	mustHave(t, s, all...)
	mustCount(t, s, all)
	e.close(s)
	s = e.open()
	mustHave(t, s, all...)
	mustCount(t, s, all)
	e.close(s)
}

func testMissingUnit(e *env, last bool) {
	t := e.t
	chs := e.fill(30, 3000, 2)
	x := chs[0]
	if last {
		x = chs[len(chs)-1]
	}
	u, _ := e.locate(x)
	gone := e.unitOf(chs)[u]
	rest := without(chs, gone...)
	if len(rest) == 0 {
		t.Fatalf("every chunk is in unit %s", u)
	}
	e.b.RemoveUnit(t, u)

	s := e.open()
	mustBeGone(t, s, gone...)
	mustHave(t, s, rest...)
	mustCount(t, s, rest)
	for _, q := range e.q.take() {
		if q.by != chunkstore.FoundByOpen || !slices.ContainsFunc(gone, func(ch chunk) bool { return ch.c.Equals(q.c) }) {
			t.Errorf("OnQuarantine told of %s by %q, want only chunks of the missing unit, by %q", q.c, q.by, chunkstore.FoundByOpen)
		}
	}

	mustPut(t, s, x)
	mustHave(t, s, x)
	more := e.chunks(5, 3000)
	mustPut(t, s, more...)
	e.close(s)

	s = e.open()
	want := slices.Concat(rest, []chunk{x}, more)
	mustHave(t, s, want...)
	mustCount(t, s, want)
	mustBeGone(t, s, without(gone, x)...)
	e.close(s)
}

func testTruncatedUnit(e *env) {
	t := e.t
	s := e.open()
	chs := append(e.chunks(6, 3000), e.chunk(5000))
	mustPut(t, s, chs...)
	e.close(s)
	torn := chs[len(chs)-1]
	u, off := e.locate(torn)
	var before []chunk // in the same unit
	for _, ch := range chs[:len(chs)-1] {
		if v, o := e.locate(ch); v == u && o < off {
			before = append(before, ch)
		}
	}
	t.Logf("%d chunks before the torn one in its unit", len(before))
	b := e.b.ReadUnit(t, u)
	e.b.WriteUnit(t, u, b[:off+len(torn.data)/2])

	s = e.open()
	mustNotServe(t, s, torn)
	rest := chs[:len(chs)-1]
	mustHave(t, s, before...)
	mustHave(t, s, rest...)
	mustCount(t, s, rest)

	mustPut(t, s, torn)
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)
	s = e.open()
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)
}

func testLostIndex(e *env) {
	t := e.t
	chs := e.fill(30, 3000, 2)
	bad := chs[4]
	e.flip(bad)
	if err := os.RemoveAll(e.b.IndexDir); err != nil {
		t.Fatal(err)
	}
	s := e.open()
	good := without(chs, bad)
	mustHave(t, s, good...)
	mustNotServe(t, s, bad)
	mustCount(t, s, good)
	res, err := s.ScrubPass(context.Background(), 0)
	if err != nil || !res.PassDone || res.Checked != len(good) || len(res.Corrupt) != 0 {
		t.Errorf("ScrubPass after the rebuild: got done %v, %d checked, corrupt %v, %v; want done, %d, none, nil",
			res.PassDone, res.Checked, res.Corrupt, err, len(good))
	}
	mustPut(t, s, bad)
	e.close(s)

	s = e.open()
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)
}

func testGarbageUnit(e *env, short bool) {
	t := e.t
	chs := e.fill(30, 3000, 2)
	u, _ := e.locate(chs[0])
	hit := e.unitOf(chs)[u]
	rest := without(chs, hit...)
	if len(rest) == 0 {
		t.Fatalf("every chunk is in unit %s", u)
	}
	n := len(e.b.ReadUnit(t, u))
	if short {
		n = 100
	}
	garbage := make([]byte, n)
	for i := range garbage {
		garbage[i] = byte(e.rng.Uint32())
	}
	copy(garbage, fmt.Sprintf("this is not a record (%d bytes of noise)", n))
	e.b.WriteUnit(t, u, garbage)

	s := e.open()
	mustHave(t, s, rest...)
	mustNotServe(t, s, hit...)
	mustCount(t, s, rest)
	for _, q := range e.q.take() {
		if !slices.ContainsFunc(hit, func(ch chunk) bool { return ch.c.Equals(q.c) }) {
			t.Errorf("OnQuarantine told of %s by %q, which was not damaged", q.c, q.by)
		}
	}

	mustPut(t, s, hit...)
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)
	s = e.open()
	mustHave(t, s, chs...)
	mustCount(t, s, chs)
	e.close(s)
}

func testDestroy(e *env) {
	t := e.t
	chs := e.fill(20, 3000, 2)
	s := e.open()
	if err := s.Destroy(); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, err := s.Has(chs[0].c); !errors.Is(err, chunkstore.ErrClosed) {
		t.Errorf("Has after Destroy: %v, want ErrClosed", err)
	}
	if u := e.b.Units(t); len(u) != 0 {
		t.Errorf("%d data units left after Destroy: %v", len(u), u)
	}
	if _, err := os.Stat(e.b.IndexDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("index directory after Destroy: %v, want it gone", err)
	}
	s = e.open()
	mustBeGone(t, s, chs...)
	mustCount(t, s, nil)
	mustPut(t, s, chs[0])
	mustHave(t, s, chs[0])
	e.close(s)
}
