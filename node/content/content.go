package content

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// ErrChunkMissing means no local store holds a chunk and no peer asked
// sent it.
var ErrChunkMissing = errors.New(doctor.MsgChunkMissing)

// Sources are where a chunk's plaintext can come from.
type Sources interface {
	// Local returns chunk c's plaintext from this device (its folder, its
	// version store), read into buf's array when it has room, or an
	// error when it does not hold it.
	Local(buf []byte, c cid.Cid) ([]byte, error)
	// Fetch asks the connected peers for cids and calls got with each
	// envelope as it arrives, its CID verified; the envelope is lent (valid
	// only during the call). An error got returns ends the fetch.
	Fetch(ctx context.Context, cids []cid.Cid, got func(c cid.Cid, env []byte) error) error
	// Open opens a fetched envelope of c (its CID verified), writing the
	// plaintext into buf's array when it has room.
	Open(buf []byte, c cid.Cid, env []byte) ([]byte, error)
	// Pending adds d to the count of chunks waiting to be fetched.
	Pending(d int)
}

// Reader yields a file version's plaintext in order: inline bytes, or
// its chunks (Produce). stop releases the producer; it must be called.
func Reader(ctx context.Context, src Sources, ver entry.Version) (io.Reader, func()) {
	if len(ver.Chunks) == 0 {
		return bytes.NewReader(ver.Inline), func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(Produce(ctx, src, ver.Chunks, pw))
	}()
	return pr, func() {
		cancel()
		_ = pr.Close()
		<-done
	}
}

// window is how many chunks one fetch asks for: about 2 MiB.
const window = 32

// ahead is how many windows are fetched at once, the one the writer
// waits for included. One window at a time left the link idle for a round
// trip and the sender's tail between windows, so a 2 MiB window per round
// trip capped a transfer (14.6 MiB/s over a 20 ms round trip, measured:
// docs/benchmarks.md, "B3 over a 20 ms round trip"); with several in
// flight the sender always has a request to answer, and the windows'
// fetches open their chunks on as many cores. Each window in flight costs
// the receiver memory (its plaintext, the stream's buffer, and the
// garbage collector's headroom over them); the benchmark says how the
// depth was chosen.
const ahead = 4

// Produce writes the plaintext of refs to w, window by window, in order.
// While the writer writes one window, a dispatcher it owns gathers the
// next ones (ahead windows at once, each from local files, or fetched from
// peers and opened as they arrive), so the disk, the network and the CPU
// work at once instead of in turn.
func Produce(ctx context.Context, src Sources, refs []entry.ChunkRef, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	bufs := &plainBufs{}
	type gathered struct {
		win   []entry.ChunkRef
		plain map[cid.Cid][]byte
		err   error
		done  chan struct{} // closed once plain and err are set
	}
	// order carries the windows in file order as they are started; with
	// the one the writer has taken, its capacity bounds how many are
	// gathered at once to ahead.
	order := make(chan *gathered, ahead-1)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(order)
		for start := 0; start < len(refs); start += window {
			if ctx.Err() != nil {
				return // a select below could still pick the send
			}
			g := &gathered{win: refs[start:min(start+window, len(refs))], done: make(chan struct{})}
			select {
			case order <- g:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer close(g.done)
				g.plain, g.err = gatherWindow(ctx, src, bufs, g.win)
			})
		}
	})
	defer func() {
		cancel()
		for g := range order {
			<-g.done
			bufs.release(g.plain)
		}
		wg.Wait()
	}()
	written := 0
	for g := range order {
		<-g.done
		if g.err != nil {
			bufs.release(g.plain)
			return g.err
		}
		for _, r := range g.win {
			b := g.plain[r.CID]
			if len(b) != int(r.Size) {
				bufs.release(g.plain)
				return fmt.Errorf("chunk %s: %d bytes, want %d", r.CID, len(b), r.Size)
			}
			if _, err := w.Write(b); err != nil {
				bufs.release(g.plain)
				return err
			}
		}
		bufs.release(g.plain)
		written += len(g.win)
	}
	if written < len(refs) {
		return ctx.Err() // the dispatcher stopped for it
	}
	return nil
}

// plainBufs recycles the plaintext buffers of one Produce call across its
// windows, in three size classes (up to 64, 128 and 256 KiB) so that a
// window of average chunks does not hold maximum-size buffers. It is
// scoped to the call, not global: a sync.Pool is emptied by every garbage
// collection, and a large transfer collects every few tens of
// milliseconds, so the pool kept almost nothing and each chunk took a new
// buffer (1.5 times the bytes fetched in allocations, the collections
// they caused, and the heap's headroom over them: docs/benchmarks.md,
// "Plaintext buffers kept per transfer"). Here a call holds at most the
// buffers of its windows in flight, and they go with it.
type plainBufs struct {
	mu   sync.Mutex
	free [3][][]byte
}

// plainClass is the size class of a plaintext of n bytes: its index and
// buffer size.
func plainClass(n int) (int, int) {
	for i := range 2 {
		if size := chunk.AvgSize << i; n <= size {
			return i, size
		}
	}
	return 2, chunk.MaxSize
}

// get returns an empty buffer of n bytes' class.
func (p *plainBufs) get(n int) []byte {
	i, size := plainClass(n)
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := len(p.free[i]); k > 0 {
		b := p.free[i][k-1]
		p.free[i] = p.free[i][:k-1]
		return b[:0]
	}
	return make([]byte, 0, size)
}

// put gives one unused buffer back (one of a class's size).
func (p *plainBufs) put(b []byte) {
	if i, size := plainClass(cap(b)); cap(b) == size {
		p.mu.Lock()
		p.free[i] = append(p.free[i], b[:0])
		p.mu.Unlock()
	}
}

// release gives a window's plaintext buffers back (those of a class's
// size; local reads and decompressed chunks may have others).
func (p *plainBufs) release(plain map[cid.Cid][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range plain {
		if i, size := plainClass(cap(b)); cap(b) == size {
			p.free[i] = append(p.free[i], b[:0])
		}
	}
}

// gatherWindow returns the plaintext of each distinct chunk of win: from
// src.Local where it has it, else fetched (src.Fetch) and opened as each
// arrives (src.Open: the fetch has verified each envelope's CID; Open
// makes every other check).
func gatherWindow(ctx context.Context, src Sources, bufs *plainBufs, win []entry.ChunkRef) (map[cid.Cid][]byte, error) {
	plain := make(map[cid.Cid][]byte, len(win))
	var need []cid.Cid
	for _, r := range win {
		if _, ok := plain[r.CID]; ok || slices.Contains(need, r.CID) {
			continue
		}
		buf := bufs.get(int(r.Size))
		if b, err := src.Local(buf, r.CID); err == nil {
			plain[r.CID] = b
			continue
		}
		bufs.put(buf) // not held here: the fetch's opening takes one again
		need = append(need, r.CID)
	}
	if len(need) == 0 {
		return plain, nil
	}
	src.Pending(len(need))
	// Each envelope is opened as it arrives, on the fetch's own goroutine
	// (one per peer asked), while it is still lent: the windows in flight
	// (ahead) already spread the opening over the cores, and no envelope
	// is copied or queued.
	var (
		mu      sync.Mutex // guards plain and openErr: a fetch from several peers calls got from each
		openErr error
	)
	err := src.Fetch(ctx, need, func(c cid.Cid, env []byte) error {
		buf := bufs.get(len(env) - chunk.Overhead)
		b, err := src.Open(buf, c, env)
		if err != nil {
			bufs.put(buf)
			err = fmt.Errorf("chunk %s: %w", c, err)
			mu.Lock()
			if openErr == nil {
				openErr = err
			}
			mu.Unlock()
			return err
		}
		mu.Lock()
		plain[c] = b
		mu.Unlock()
		src.Pending(-1)
		return nil
	})
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		src.Pending(-(len(need) - countIn(plain, need)))
		if openErr != nil {
			// Why a chunk that arrived did not open (an unknown epoch, a
			// tag mismatch), not what the fetch made of it after asking
			// the other peers (missing).
			return plain, openErr
		}
		return plain, err
	}
	return plain, nil
}

func countIn(m map[cid.Cid][]byte, cs []cid.Cid) int {
	n := 0
	for _, c := range cs {
		if _, ok := m[c]; ok {
			n++
		}
	}
	return n
}
