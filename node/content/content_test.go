package content

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// fakeSources holds some chunks locally and serves the rest as "peers":
// an envelope is the chunk's plaintext behind chunk.Overhead bytes.
type fakeSources struct {
	local, remote map[cid.Cid][]byte
	openFails     cid.Cid // Open of this chunk fails

	mu      sync.Mutex
	pending int
	fetched []cid.Cid
}

func (f *fakeSources) Local(buf []byte, c cid.Cid) ([]byte, error) {
	if b, ok := f.local[c]; ok {
		return append(buf[:0], b...), nil
	}
	return nil, errors.New("not here")
}

func (f *fakeSources) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	for _, c := range cids {
		b, ok := f.remote[c]
		if !ok {
			return fmt.Errorf("chunk %s: no peer has it", c)
		}
		f.mu.Lock()
		f.fetched = append(f.fetched, c)
		f.mu.Unlock()
		env := append(make([]byte, chunk.Overhead), b...)
		if err := got(c, env); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeSources) Open(buf []byte, c cid.Cid, env []byte) ([]byte, error) {
	if c.Equals(f.openFails) {
		return nil, errors.New("tag mismatch")
	}
	return append(buf[:0], env[chunk.Overhead:]...), nil
}

func (f *fakeSources) Pending(d int) {
	f.mu.Lock()
	f.pending += d
	f.mu.Unlock()
}

// chunks makes n distinct chunks and their refs; every third is local.
func chunks(n int) (refs []entry.ChunkRef, want []byte, src *fakeSources) {
	src = &fakeSources{local: map[cid.Cid][]byte{}, remote: map[cid.Cid][]byte{}}
	for i := range n {
		b := bytes.Repeat([]byte{byte(i)}, 100+i)
		c := chunk.SumCID(b)
		if i%3 == 0 {
			src.local[c] = b
		} else {
			src.remote[c] = b
		}
		refs = append(refs, entry.ChunkRef{CID: c, Size: uint32(len(b))})
		want = append(want, b...)
	}
	return refs, want, src
}

// Produce writes every chunk in order, across windows, taking local ones
// from Local and fetching only the rest, each once even when a window
// lists it twice; nothing stays counted as pending.
func TestProduceInOrder(t *testing.T) {
	refs, want, src := chunks(2*window + 5)
	refs = append(refs, refs[1], refs[0]) // repeated chunks (a file with a repeated block)
	want = append(want, src.remote[refs[1].CID]...)
	want = append(want, src.local[refs[0].CID]...)
	var out bytes.Buffer
	if err := Produce(context.Background(), src, refs, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("produced %d bytes, not the chunks in order (%d bytes)", out.Len(), len(want))
	}
	seen := map[string]int{}
	for _, c := range src.fetched {
		seen[c.String()]++
		if _, ok := src.local[c]; ok {
			t.Errorf("fetched %s, which was local", c)
		}
	}
	for c, n := range seen {
		if n > 2 { // once in its own window, once more in the last window at most
			t.Errorf("fetched %s %d times", c, n)
		}
	}
	if src.pending != 0 {
		t.Errorf("pending %d after the content was produced, want 0", src.pending)
	}
}

// A chunk that does not open ends the content with the opener's error,
// and what was counted pending is uncounted.
func TestProduceOpenFailure(t *testing.T) {
	refs, _, src := chunks(10)
	src.openFails = refs[4].CID
	err := Produce(context.Background(), src, refs, io.Discard)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("tag mismatch")) {
		t.Fatalf("got %v, want the opener's error", err)
	}
	if src.pending != 0 {
		t.Errorf("pending %d after a failed window, want 0", src.pending)
	}
}

// A chunk whose plaintext is not the size the entry lists is refused.
func TestProduceWrongSize(t *testing.T) {
	refs, _, src := chunks(4)
	refs[2].Size++
	if err := Produce(context.Background(), src, refs, io.Discard); err == nil {
		t.Fatal("a chunk of the wrong size was written")
	}
}

// Reader yields the same bytes; stop releases the producer even when the
// reader stops early (no goroutine is left writing to the pipe).
func TestReader(t *testing.T) {
	refs, want, src := chunks(window + 3)
	r, stop := Reader(context.Background(), src, entry.Version{Chunks: refs})
	got, err := io.ReadAll(r)
	stop()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, err %v; want %d bytes", len(got), err, len(want))
	}
	r, stop = Reader(context.Background(), src, entry.Version{Chunks: refs})
	if _, err := r.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	stop() // returns only once the producer has ended
	inline, stop := Reader(context.Background(), src, entry.Version{Inline: []byte("small")})
	if b, _ := io.ReadAll(inline); string(b) != "small" {
		t.Fatalf("inline content read as %q", b)
	}
	stop()
}

// blockingSources is fakeSources whose Fetch does not answer until a
// number of fetches are in flight at once, and counts the most there
// ever were.
type blockingSources struct {
	*fakeSources
	need int // fetches that must be in flight before any answers

	mu       sync.Mutex
	inFlight int
	most     int
	started  int
	enough   chan struct{} // closed once need fetches have started
}

func (b *blockingSources) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	b.mu.Lock()
	b.inFlight++
	b.started++
	b.most = max(b.most, b.inFlight)
	if b.started == b.need {
		close(b.enough)
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	select {
	case <-b.enough:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.fakeSources.Fetch(ctx, cids, got)
}

// TestProduceFetchesAhead: windows are fetched ahead windows at a time,
// so a slow link (one round trip per fetch) carries several at once; no
// window is answered until ahead fetches are in flight, which a producer
// fetching one window at a time never reaches (its context's deadline
// then fails the test), and never more than ahead are in flight.
func TestProduceFetchesAhead(t *testing.T) {
	refs, want, fs := chunks(window * (ahead + 3))
	for c, b := range fs.local { // every chunk fetched
		fs.remote[c] = b
	}
	fs.local = map[cid.Cid][]byte{}
	src := &blockingSources{fakeSources: fs, need: ahead, enough: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := Produce(ctx, src, refs, &out); err != nil {
		t.Fatalf("%v (fetches in flight at most %d, want %d)", err, src.most, ahead)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("produced %d bytes, not the chunks in order (%d bytes)", out.Len(), len(want))
	}
	if src.most != ahead {
		t.Fatalf("at most %d fetches in flight, want %d", src.most, ahead)
	}
}

// lendingSources serves each fetch's chunks from one reused envelope
// buffer (an envelope is lent to got, as the network fetch lends it), so
// that what a Produce allocates is nearly all its own.
type lendingSources struct {
	*fakeSources
	envs chan []byte // envelope buffers, one per fetch in flight
}

func (l *lendingSources) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	var env []byte
	select {
	case env = <-l.envs:
	default:
		env = make([]byte, 0, chunk.MaxEnvelopeSize)
	}
	defer func() { l.envs <- env }()
	for _, c := range cids {
		env = append(append(env[:0], make([]byte, chunk.Overhead)...), l.remote[c]...)
		if err := got(c, env); err != nil {
			return err
		}
	}
	return nil
}

// TestProduceReusesBuffers: a Produce keeps its plaintext buffers across
// windows, so what it allocates is bounded by the windows in flight, not
// by the file: 200 windows (about 390 MB) allocate well under what 8
// windows' buffers take. A buffer taken for a local read that missed went
// back too (it was lost before, and with it every window's reuse), and a
// global sync.Pool, emptied by each collection, gave back almost nothing
// during a transfer.
func TestProduceReusesBuffers(t *testing.T) {
	const windows = 200
	fs := &fakeSources{local: map[cid.Cid][]byte{}, remote: map[cid.Cid][]byte{}}
	var refs []entry.ChunkRef
	for i := range window * windows {
		b := make([]byte, 60<<10)
		b[0], b[1], b[2] = byte(i), byte(i>>8), byte(i>>16)
		c := chunk.SumCID(b)
		fs.remote[c] = b
		refs = append(refs, entry.ChunkRef{CID: c, Size: uint32(len(b))})
	}
	src := &lendingSources{fakeSources: fs, envs: make(chan []byte, 2*ahead)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := Produce(context.Background(), src, refs, io.Discard); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	bound := uint64(8 * window * (64 << 10)) // 8 windows of 64 KiB buffers: 16 MiB
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Fatalf("producing %d MiB allocated %d MiB, want at most %d MiB (the windows in flight)",
			window*windows*60>>10, got>>20, bound>>20)
	}
}

// missingAfterFailure is a Sources whose Fetch, like content.Spread, turns
// any failure into ErrChunkMissing after asking "the other peers".
type missingAfterFailure struct{ *fakeSources }

func (m missingAfterFailure) Fetch(ctx context.Context, cids []cid.Cid, got func(cid.Cid, []byte) error) error {
	if err := m.fakeSources.Fetch(ctx, cids, got); err != nil {
		return fmt.Errorf("%w (%d chunks)", ErrChunkMissing, len(cids))
	}
	return nil
}

// A chunk that arrived and did not open is reported with the opener's
// reason, even when the fetch reports the chunk missing after it (doctor
// and restore tell an unknown epoch or a bad tag from an absent chunk).
func TestProduceReportsWhyAChunkDidNotOpen(t *testing.T) {
	refs, _, src := chunks(10)
	src.openFails = refs[4].CID
	err := Produce(context.Background(), missingAfterFailure{src}, refs, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "tag mismatch") || errors.Is(err, ErrChunkMissing) {
		t.Fatalf("got %v, want the opener's error, not missing", err)
	}
}
