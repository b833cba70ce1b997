package netsync

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// The chunk protocol (/weft/chunk/1), after the Hello: the opener sends
// batches of wanted CIDs (pipelined: it need not wait for answers before
// the next batch); the answerer streams one Chunk or ChunkMissing per
// wanted CID, in order.

// Stream is what a session needs of its stream besides the frames that
// wire.Conn reads and writes: a libp2p network.Stream is one.
type Stream interface {
	SetReadDeadline(time.Time) error
	// Reset ends the stream at once in both directions, unblocking any
	// read or write in progress.
	Reset() error
}

// FetchBatch is the number of CIDs per WantChunks message.
const FetchBatch = 64

// FetchChunks asks the answerer on c (whose Hello is done) for cids and
// calls got for each chunk it sends, in arrival order, on this goroutine;
// the envelope is the caller's to keep. It does not check envelopes
// against their CIDs: got does, or the store it puts them in. Each answer
// must come within idle. It returns the CIDs the answerer said it lacks,
// and, after an error (the stream's, an answer that was not asked for,
// got's), every CID not answered as well, and the one got refused.
//
// The wanted batches are written by a goroutine of this call, so that a
// long want list never waits on the answers' flow control; on an early
// return the stream is reset, which ends that writer, and the call waits
// for it.
func FetchChunks(s Stream, c *wire.Conn, cids []cid.Cid, idle time.Duration, got func(cid.Cid, []byte) error) (missing []cid.Cid, err error) {
	return fetchChunks(s, c, nil, cids, idle, nil, got)
}

// OpenAndFetch is FetchChunks (or FetchChunksLent, when lent) on a stream
// whose Hello is not done yet: it sends the Hello for vault with the first
// want-list behind it and reads the answerer's Hello before the first
// chunk (wire.Conn.SendHello), so a fetch costs one round trip, not two.
// A refused Hello fails the fetch with the answerer's Error, every CID
// missing.
func OpenAndFetch(s Stream, c *wire.Conn, vault keys.VaultID, cids []cid.Cid, idle time.Duration, lent bool, got func(cid.Cid, []byte) error) (missing []cid.Cid, err error) {
	if !lent {
		return fetchChunks(s, c, &vault, cids, idle, nil, got)
	}
	buf := frameBufs.Get().(*[]byte)
	defer frameBufs.Put(buf)
	return fetchChunks(s, c, &vault, cids, idle, *buf, got)
}

// FetchChunksLent is FetchChunks with each envelope lent to got: it lies in
// a buffer the call reads the next chunk into, so it is valid only until
// got returns, and got copies what it keeps. A fetch then allocates no
// buffer per chunk: FetchChunks' fresh envelope, grown from 64 KiB as the
// frame arrives, cost about twice the bytes fetched in allocations and
// their collection (a tenth of a receiver's CPU in B3).
func FetchChunksLent(s Stream, c *wire.Conn, cids []cid.Cid, idle time.Duration, got func(cid.Cid, []byte) error) (missing []cid.Cid, err error) {
	buf := frameBufs.Get().(*[]byte)
	defer frameBufs.Put(buf)
	return fetchChunks(s, c, nil, cids, idle, *buf, got)
}

// frameBufCap holds any chunk frame of the chunk format: a CID (under 128
// bytes with its length) and an envelope of at most chunk.MaxEnvelopeSize
// bytes. A larger frame (which cannot hold a valid chunk) is read into a
// buffer of its own.
const frameBufCap = chunk.MaxEnvelopeSize + 256

// frameBufs recycles FetchChunksLent's read buffers across fetches.
var frameBufs = sync.Pool{New: func() any { b := make([]byte, 0, frameBufCap); return &b }}

// fetchChunks is FetchChunks reading every frame into buf when it fits
// (nil: a buffer of its own per frame), opening the stream with a Hello
// for *hello first when it is set (OpenAndFetch).
func fetchChunks(s Stream, c *wire.Conn, hello *keys.VaultID, cids []cid.Cid, idle time.Duration, buf []byte, got func(cid.Cid, []byte) error) (missing []cid.Cid, err error) {
	werr := make(chan error, 1)
	wdone := make(chan struct{})
	defer func() {
		select {
		case <-wdone:
		default:
			_ = s.Reset()
			<-wdone
		}
	}()
	go func() {
		defer close(wdone)
		if hello != nil {
			if err := c.SendHello(*hello); err != nil {
				werr <- err
				return
			}
		}
		for i := 0; i < len(cids); i += FetchBatch {
			end := min(i+FetchBatch, len(cids))
			if err := c.Send(wire.MsgWantChunks, wire.WantChunks{CIDs: cids[i:end]}); err != nil {
				werr <- err
				return
			}
		}
		werr <- c.Flush()
	}()
	if hello != nil {
		_ = s.SetReadDeadline(time.Now().Add(idle))
		if err := c.AwaitHello(*hello); err != nil {
			return cids, err
		}
	}
	pending := make(map[cid.Cid]bool, len(cids))
	for _, id := range cids {
		pending[id] = true
	}
	for answered := 0; answered < len(cids); answered++ {
		// A peer that stops answering must not stall the caller: each
		// answer has to come within idle.
		_ = s.SetReadDeadline(time.Now().Add(idle))
		t, payload, err := c.ReadInto(buf)
		if err != nil {
			return append(missing, remaining(cids, pending)...), err
		}
		var id cid.Cid
		var env []byte
		switch t {
		case wire.MsgChunk:
			ch, err := wire.ParseChunk(payload)
			if err != nil {
				return append(missing, remaining(cids, pending)...), err
			}
			id, env = ch.CID, ch.Envelope
		case wire.MsgChunkMissing:
			m, err := wire.ParseChunkMissing(payload)
			if err != nil {
				return append(missing, remaining(cids, pending)...), err
			}
			id = m.CID
		default:
			return append(missing, remaining(cids, pending)...), fmt.Errorf("%w on chunk stream: %s", wire.ErrUnexpected, t)
		}
		if !pending[id] {
			return append(missing, remaining(cids, pending)...), fmt.Errorf("%w: chunk %s was not asked for", wire.ErrUnexpected, id)
		}
		delete(pending, id)
		if env == nil {
			missing = append(missing, id)
			continue
		}
		if err := got(id, env); err != nil {
			return append(append(missing, id), remaining(cids, pending)...), err
		}
	}
	if err := <-werr; err != nil {
		return missing, err
	}
	return missing, nil
}

// remaining lists the CIDs still pending, in request order, each once.
func remaining(cids []cid.Cid, pending map[cid.Cid]bool) []cid.Cid {
	var out []cid.Cid
	for _, id := range cids {
		if pending[id] {
			out = append(out, id)
			delete(pending, id)
		}
	}
	return out
}

// MakeChunk appends the envelope of chunk id to dst and returns it, with
// scratch (a buffer the maker may use and hand back, grown). An error
// means the chunk is not held (or no longer reads back as id): it is
// answered ChunkMissing.
type MakeChunk func(dst []byte, id cid.Cid, scratch []byte) (out, scratchOut []byte, err error)

// ChunkServer answers chunk streams from one source of chunks.
type ChunkServer struct {
	// Make produces a chunk's envelope; it is called from Workers
	// goroutines at once.
	Make    MakeChunk
	Workers int
	// Served, if set, is called once for each chunk sent.
	Served func()
}

// ServeAhead bounds the chunks made and not yet sent on one stream, so a
// slow reader bounds the memory.
const ServeAhead = 4

// servePool recycles chunk frames (the CID, then the envelope) and
// scratch buffers, so serving allocates no chunk-sized buffer.
var servePool = sync.Pool{New: func() any { b := make([]byte, 0, chunk.MaxEnvelopeSize+64); return &b }}

// Serve answers the want batches on c (whose Hello is done) until the
// stream ends or fails. Before each batch it asks allowed (nil: always),
// and ends the stream with a not-member Error when it refuses (a device
// revoked while its stream was open).
func (cs ChunkServer) Serve(c *wire.Conn, allowed func() bool) {
	for {
		p, err := c.ExpectLimit(wire.MsgWantChunks, wire.MaxWantChunksFrame)
		if err != nil {
			return
		}
		if allowed != nil && !allowed() {
			c.SendError(wire.CodeNotMember, "revoked from this vault")
			return
		}
		want, err := wire.ParseWantChunks(p)
		if err != nil {
			c.SendError(wire.CodeProtocol, err.Error())
			return
		}
		if err := cs.Send(c, want.CIDs); err != nil {
			return
		}
		if err := c.Flush(); err != nil {
			return
		}
	}
}

// servedChunk is one wanted chunk as a worker made it: a Chunk frame's
// payload, or nil for ChunkMissing.
type servedChunk struct {
	frame *[]byte
	ready chan struct{}
}

// Send sends c one Chunk (or ChunkMissing) per CID of cids, in order,
// making them on up to cs.Workers goroutines, which it starts and waits
// for; each is sent as soon as it and those before it are ready, and at
// most ServeAhead are made and not yet sent. It returns the first send
// error; the chunks not sent by then are dropped.
func (cs ChunkServer) Send(c *wire.Conn, cids []cid.Cid) error {
	slots := make([]servedChunk, len(cids))
	for i := range slots {
		slots[i].ready = make(chan struct{})
	}
	var (
		next   atomic.Int64
		tokens = make(chan struct{}, ServeAhead)
		done   = make(chan struct{})
		wg     sync.WaitGroup
	)
	defer func() {
		close(done)
		wg.Wait()
		for _, sl := range slots {
			if sl.frame != nil {
				servePool.Put(sl.frame)
			}
		}
	}()
	for range min(max(cs.Workers, 1), len(cids)) {
		wg.Go(func() {
			scratch := servePool.Get().(*[]byte)
			defer servePool.Put(scratch)
			for {
				// A token first, then the next index: chunks are taken in
				// order, so the one the sender waits for is always taken.
				select {
				case tokens <- struct{}{}:
				case <-done:
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(cids) {
					return
				}
				frame := servePool.Get().(*[]byte)
				prefix := wire.Chunk{CID: cids[i]}.AppendBinary((*frame)[:0])
				out, s, err := cs.Make(prefix, cids[i], (*scratch)[:0])
				*scratch = s[:0]
				if err != nil {
					servePool.Put(frame)
					frame = nil
				} else {
					*frame = out
				}
				slots[i].frame = frame
				close(slots[i].ready)
			}
		})
	}
	for i, id := range cids {
		<-slots[i].ready
		var err error
		if fr := slots[i].frame; fr == nil {
			err = c.Send(wire.MsgChunkMissing, wire.ChunkMissing{CID: id})
		} else {
			err = c.SendRaw(wire.MsgChunk, *fr)
			slots[i].frame = nil
			servePool.Put(fr)
			if cs.Served != nil {
				cs.Served()
			}
		}
		<-tokens
		if err != nil {
			return err
		}
	}
	return nil
}
