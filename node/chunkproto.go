package node

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// The chunk protocol (/weft/chunk/1): the opener sends batches of wanted
// CIDs (pipelined: it need not wait for answers before the next batch); the
// answerer streams one Chunk or ChunkMissing per wanted CID, in order.
// A device serves chunks by re-creating them from its own files: it reads
// the plaintext where its index says the chunk lies, checks the file has
// not changed since it was scanned, seals it, and sends it only if the
// result has the wanted CID.

// handleChunk answers a chunk stream.
func (n *Node) handleChunk(s network.Stream) {
	defer s.Close()
	f, v, _, ok := n.openStream(s)
	if !ok {
		return
	}
	_ = s.SetReadDeadline(time.Time{})
	for {
		p, err := f.ExpectLimit(wire.MsgWantChunks, wire.MaxWantChunksFrame)
		if err != nil {
			return
		}
		want, err := wire.ParseWantChunks(p)
		if err != nil {
			f.SendError(wire.CodeProtocol, err.Error())
			return
		}
		if err := v.serveChunks(f, want.CIDs, runtime.GOMAXPROCS(0)); err != nil {
			return
		}
		if err := f.Flush(); err != nil {
			return
		}
	}
}

// Serving a chunk means reading it from its file and sealing it again
// (about a third of a sender's CPU in B3), which one goroutine did for one
// chunk after another while the stream waited. serveChunks re-creates the
// wanted chunks on a few workers and sends them in the order asked, each
// as soon as it and those before it are ready: at most serveAhead chunks
// are made and not yet sent, so a slow reader bounds the memory.
const serveAhead = 4

// servePool recycles chunk frames (the CID, then the envelope) and
// plaintext buffers, so serving allocates no chunk-sized buffer.
var servePool = sync.Pool{New: func() any { b := make([]byte, 0, chunk.MaxEnvelopeSize+64); return &b }}

// servedChunk is one wanted chunk as a worker made it: a Chunk frame's
// payload, or nil for ChunkMissing.
type servedChunk struct {
	frame *[]byte
	ready chan struct{}
}

// serveChunks sends f one Chunk (or ChunkMissing) per CID of cids, in
// order, re-creating them on up to workers goroutines, which it starts and
// waits for. It returns the first send error; the chunks not sent by then
// are dropped.
func (v *vault) serveChunks(f *wire.Conn, cids []cid.Cid, workers int) error {
	slots := make([]servedChunk, len(cids))
	for i := range slots {
		slots[i].ready = make(chan struct{})
	}
	var (
		next   atomic.Int64
		tokens = make(chan struct{}, serveAhead)
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
	for range min(workers, len(cids)) {
		wg.Go(func() {
			plain := servePool.Get().(*[]byte)
			defer servePool.Put(plain)
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
				out, scratch, err := v.appendLocalEnvelope(prefix, cids[i], (*plain)[:0])
				*plain = scratch[:0]
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
	for i, c := range cids {
		<-slots[i].ready
		var err error
		if fr := slots[i].frame; fr == nil {
			err = f.Send(wire.MsgChunkMissing, wire.ChunkMissing{CID: c})
		} else {
			err = f.SendRaw(wire.MsgChunk, *fr)
			slots[i].frame = nil
			servePool.Put(fr)
			v.n.stats.chunksServed.Add(1)
		}
		<-tokens
		if err != nil {
			return err
		}
	}
	return nil
}

// errChunkMissing means no peer asked had the chunk.
var errChunkMissing = errors.New("chunk not available from any peer")

// chunkIdle is how long a chunk stream may go without an answer.
const chunkIdle = 30 * time.Second

// helloTimeout bounds how long an opener may take to say who it is.
const helloTimeout = 10 * time.Second

// fetchBatch is the number of CIDs per WantChunks message.
const fetchBatch = 64

// fetchChunks asks p for cids and calls got for each envelope that arrives
// and verifies against its CID. It returns the CIDs p did not have. got is
// called from this goroutine, in arrival order.
func (v *vault) fetchChunks(ctx context.Context, p peer.ID, dev keys.DeviceID, cids []cid.Cid, got func(cid.Cid, []byte) error) (missing []cid.Cid, err error) {
	var gotBytes int64
	done := v.noteTransfer(dev, len(cids))
	defer func() { done(len(cids)-len(missing), gotBytes, err) }()
	s, err := v.n.host.NewStream(ctx, p, ProtoChunk)
	if err != nil {
		return cids, fmt.Errorf("opening chunk stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	f := v.n.outboundConn(s, dev)
	if err := f.OpenHello(v.id); err != nil {
		return cids, err
	}
	// Writer: all want batches up front (the answerer reads them as it
	// goes; a stream's flow control bounds what is in flight).
	werr := make(chan error, 1)
	wdone := make(chan struct{})
	// The writer is this call's: on an early return the stream is reset,
	// which ends a Send blocked on flow control, and the call waits for it.
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
		for i := 0; i < len(cids); i += fetchBatch {
			end := min(i+fetchBatch, len(cids))
			if err := f.Send(wire.MsgWantChunks, wire.WantChunks{CIDs: cids[i:end]}); err != nil {
				werr <- err
				return
			}
		}
		werr <- f.Flush()
	}()
	pending := make(map[cid.Cid]bool, len(cids))
	for _, c := range cids {
		pending[c] = true
	}
	for answered := 0; answered < len(cids); answered++ {
		// A peer that stops answering must not stall this device's sync:
		// each answer has to come within chunkIdle.
		_ = s.SetReadDeadline(time.Now().Add(chunkIdle))
		t, payload, err := f.Read()
		if err != nil {
			return remaining(cids, pending), err
		}
		switch t {
		case wire.MsgChunk:
			ch, err := wire.ParseChunk(payload)
			if err != nil {
				return remaining(cids, pending), err
			}
			if !pending[ch.CID] {
				return remaining(cids, pending), fmt.Errorf("%w: chunk %s was not asked for", wire.ErrUnexpected, ch.CID)
			}
			if err := verifyBlob(ch.CID, ch.Envelope); err != nil {
				return remaining(cids, pending), fmt.Errorf("chunk from %s: %w", dev, err)
			}
			delete(pending, ch.CID)
			gotBytes += int64(len(ch.Envelope))
			v.n.stats.chunksFetched.Add(1)
			v.n.stats.chunkBytesFetched.Add(int64(len(ch.Envelope)))
			if err := got(ch.CID, ch.Envelope); err != nil {
				return remaining(cids, pending), err
			}
		case wire.MsgChunkMissing:
			m, err := wire.ParseChunkMissing(payload)
			if err != nil {
				return remaining(cids, pending), err
			}
			missing = append(missing, m.CID)
			delete(pending, m.CID)
		default:
			return remaining(cids, pending), fmt.Errorf("%w on chunk stream: %s", wire.ErrUnexpected, t)
		}
	}
	if err := <-werr; err != nil {
		return append(missing, remaining(cids, pending)...), err
	}
	return missing, nil
}

// remaining lists the CIDs still pending, in request order.
func remaining(cids []cid.Cid, pending map[cid.Cid]bool) []cid.Cid {
	var out []cid.Cid
	for _, c := range cids {
		if pending[c] {
			out = append(out, c)
			delete(pending, c) // list each once
		}
	}
	return out
}
