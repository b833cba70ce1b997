package pack

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// Group commit. Put hands its chunk to a single commit loop and waits. The
// loop takes every request queued, waits up to CommitDelay for the other Put
// calls in progress to join, and then commits the batch in two stages that
// run in two goroutines, so that one batch is being written while the one
// before it is being fsynced:
//
//	stage 1, the loop (holding wmu):
//	  1. look the chunks up in the index (present ones are not written);
//	  2. append the new records to the current pack, asking the kernel to
//	     start writing them back at once (writeback.go);
//	stage 2, the syncer (in batch order, one batch at a time):
//	  3. fsync the pack (each pack the batch wrote to, in order);
//	  4. write the index entries and the packs' new indexed lengths in one
//	     goleveldb batch, not synced unless it renews or relocates a chunk
//	     (syncer.go says why the pack fsync is enough);
//	  5. answer every caller.
//
// Because step 4 starts only after step 3 succeeded, the index never points
// at bytes that are not durable, whatever the next batch is doing: the
// records it appends lie past those of the batch being synced and are not
// indexed before their own fsync. A crash leaves records the index does not
// know or a torn tail past the indexed length; Open indexes the first and
// truncates the second (recover.go). No caller has been answered for
// either, so nothing acknowledged is lost.
//
// The overlap needs three rules, each kept below:
//   - A batch that names a chunk the batch in stage 2 also names waits for
//     that batch to finish before its step 1, so that every decision made
//     from the index (present? renew? relocate?) sees the one before it.
//   - Whatever drops index entries or picks packs to delete (GC, scrub,
//     Verify, Close) takes lockIdle: wmu with no batch in stage 2. So a
//     chunk a Put found present cannot be dropped before that Put returns,
//     and GC never sees a pack with records not yet indexed.
//   - A pack file is closed by the syncer after its last fsync, never by
//     the loop while a batch may still need it. After a failed fsync the
//     syncer fails every later record in that file without syncing it and
//     hands the file back to the loop (failedPack), which cuts it back to
//     its last synced length and starts a new pack.

// maxBatchBytes bounds the chunk bytes in one group commit, so that one
// fsync does not grow without limit under heavy load. At most two batches
// are in flight (one in each stage), so the store holds on to at most
// 64 MiB of its callers' chunks and copies none of a large one (small
// records are gathered in a 1 MiB buffer).
const maxBatchBytes = 32 << 20

// refreshAge is how old a chunk's stored time must be before a Put of the
// same chunk renews it. The renewal keeps a chunk uploaded again (because a
// new entry references it) out of GC's reach for another grace period.
const refreshAge = int64(time.Hour / time.Second)

var (
	syncWrite   = &opt.WriteOptions{Sync: true}
	noSyncWrite = &opt.WriteOptions{}
)

// putReq is one chunk handed to the commit loop.
type putReq struct {
	cidBytes []byte
	key      []byte // chunkKey(cidBytes)
	data     []byte
	// reloc is set for a GC rewrite: write the record again only if the
	// index still holds reloc, and keep its stored time.
	reloc *loc
	done  chan error

	err   error   // set by the loop: this request's own failure
	dupOf *putReq // set by the loop: same chunk as an earlier request
}

// Put stores data under c and returns nil once it is durable. c must be the
// hash of data (else ErrCIDMismatch); data must be at most MaxChunkSize
// bytes (else ErrTooLarge). Storing a chunk the store already holds writes
// nothing and returns nil. The store does not keep data after Put returns.
// On any other error the chunk may or may not be stored; Put it again.
func (s *Store) Put(c cid.Cid, data []byte) error {
	if len(data) > MaxChunkSize {
		return fmt.Errorf("chunk %s of %d bytes: %w", c, len(data), ErrTooLarge)
	}
	if !chunkstore.Verify(c, data) {
		return fmt.Errorf("chunk %s: %w", c, ErrCIDMismatch)
	}
	cb := c.Bytes()
	if len(cb) > chunkrec.MaxCIDLen {
		return fmt.Errorf("chunk %s: CID of %d bytes is too long", c, len(cb))
	}
	return s.submit(&putReq{cidBytes: cb, key: chunkKey(cb), data: data})
}

// submit hands r to the commit loop and waits for its answer.
func (s *Store) submit(r *putReq) error {
	if s.closed.Load() {
		return ErrClosed
	}
	r.done = make(chan error, 1)
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	select {
	case s.reqs <- r:
	case <-s.quit:
		return ErrClosed
	}
	select {
	case err := <-r.done:
		return err
	case <-s.loopDone:
		// The loop answers everything it took before it exits.
		select {
		case err := <-r.done:
			return err
		default:
			return ErrClosed
		}
	}
}

// loop is the commit loop; it is the only writer of packs. It runs stage 1
// of each batch and hands the batch to the syncer (stage 2) through an
// unbuffered channel, so that at most one batch is being synced while the
// next one is written.
func (s *Store) loop() {
	flights := make(chan *flight)
	syncerDone := make(chan struct{})
	go s.syncer(flights, syncerDone)
	defer func() {
		close(flights)
		<-syncerDone // the syncer answers every batch it was handed
		close(s.loopDone)
	}()
	prev := 0        // size of the previous batch
	var last *flight // the batch handed to the syncer last
	for {
		var first *putReq
		select {
		case first = <-s.reqs:
		case <-s.quit:
			for {
				select {
				case r := <-s.reqs:
					r.done <- ErrClosed
				default:
					return
				}
			}
		}
		batch := s.gather(first, prev)
		prev = len(batch)
		var herr error
		if s.broken.Load() {
			// An index write failed: reopen the index before this
			// batch uses it, once the batch before has finished with it.
			if last != nil {
				<-last.done
			}
			herr = s.heal()
		} else if last != nil && last.names(batch) {
			<-last.done
		}
		last = s.stage1(batch, herr)
		flights <- last
	}
}

// gather builds a batch starting with first: everything queued, then, while
// the batch holds fewer requests than Put calls are in progress (or than
// the previous batch held), whatever arrives with gaps shorter than
// CommitDelay. A writer that stopped costs one CommitDelay once. Waiting
// for the callers known to be coming is what makes 16 writers share one
// fsync rather than alternate between two half-sized batches. This counts
// the callers of a batch still being synced too: waiting for them (until
// they are answered and Put again) costs little while that batch's fsync
// runs, and it keeps small chunks at one fsync per 16 puts, where letting
// two half-sized batches alternate would double the fsyncs.
func (s *Store) gather(first *putReq, prev int) []*putReq {
	batch := []*putReq{first}
	size := len(first.data)
	add := func(r *putReq) {
		batch = append(batch, r)
		size += len(r.data)
	}
drain:
	for size < maxBatchBytes {
		select {
		case r := <-s.reqs:
			add(r)
		default:
			break drain
		}
	}
	// The callers to wait for: those in Put now, or as many as joined the
	// previous batch (an answered caller leaves the count for a moment
	// before its next Put enters it again).
	want := func() int { return max(int(s.inflight.Load()), prev) }
	if s.cfg.CommitDelay < 0 || size >= maxBatchBytes || len(batch) >= want() {
		return batch
	}
	// Wait while requests keep arriving: the timer restarts with each one,
	// and a deadline of four delays bounds the whole wait.
	timer := time.NewTimer(s.cfg.CommitDelay)
	defer timer.Stop()
	deadline := time.NewTimer(4 * s.cfg.CommitDelay)
	defer deadline.Stop()
	for size < maxBatchBytes && len(batch) < want() {
		select {
		case r := <-s.reqs:
			add(r)
			timer.Reset(s.cfg.CommitDelay)
		case <-timer.C:
			return batch
		case <-deadline.C:
			return batch
		case <-s.quit:
			return batch
		}
	}
	return batch
}

// stage1 runs steps 1 and 2 for batch: it decides from the index what to
// write, appends the records and returns the batch as a flight for the
// syncer. It sets a request's err for failures of its own, and fails every
// request with herr if that is set (the index could not be reopened).
func (s *Store) stage1(batch []*putReq, herr error) *flight {
	f := &flight{
		batch: batch,
		keys:  make(map[string]bool, len(batch)),
		ib:    new(leveldb.Batch),
		done:  make(chan struct{}),
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.pmu.Lock()
	s.syncing++ // until the syncer has answered the batch, see lockIdle
	s.pmu.Unlock()
	s.reapFailed()
	if herr != nil {
		for _, r := range batch {
			r.err = fmt.Errorf("chunk index unavailable: %w", herr)
		}
		return f
	}
	s.batches.Add(1)
	now := s.cfg.Now().Unix()
	seen := make(map[string]*putReq, len(batch))
	var writes []*putReq
	for _, r := range batch {
		f.keys[string(r.key)] = true
		if r.reloc == nil {
			if p, ok := seen[string(r.key)]; ok {
				r.dupOf = p
				continue
			}
			seen[string(r.key)] = r
		}
		v, err := s.db.Get(r.key, nil)
		switch {
		case err == nil:
			l, derr := decodeLoc(v)
			if r.reloc != nil {
				if derr == nil && l.sameRecord(*r.reloc) {
					r.reloc.stored = l.stored // keep a renewal made meanwhile
					writes = append(writes, r)
				}
				continue // dropped or moved meanwhile: nothing to relocate
			}
			if derr != nil {
				// A damaged entry: store afresh, synced. Open's recovery
				// skips a record whose key the index holds, so the new
				// record's entry cannot be re-derived from the pack.
				writes = append(writes, r)
				f.sync = true
			} else if now-l.stored > refreshAge {
				l.stored = now
				f.ib.Put(r.key, l.encode())
				f.sync = true // a renewal is not derived from a pack
			}
		case errors.Is(err, leveldb.ErrNotFound):
			if r.reloc == nil {
				writes = append(writes, r)
			}
		default:
			r.err = fmt.Errorf("reading index: %w", err)
		}
	}
	if len(writes) > 0 {
		s.appendRecords(f, writes, now)
	}
	return f
}

// appendRecords appends a record for each of writes to the current pack
// (rotating to a new pack when one is full) and adds a segment to f for
// each pack written to. Records it could not write get the error.
func (s *Store) appendRecords(f *flight, writes []*putReq, now int64) {
	if s.bw == nil {
		s.bw = bufio.NewWriterSize(nil, 1<<20)
	}
	bw := s.bw
	var seg *segment
	start := func() error {
		if err := s.prepareAppend(); err != nil {
			return err
		}
		seg = &segment{f: s.cur, id: s.curID, start: s.curSize, end: s.curSize}
		bw.Reset(&packWriter{f: s.cur, off: s.curSize})
		return nil
	}
	// finish writes out what bw holds of seg and hands seg to the syncer.
	finish := func() error {
		if err := bw.Flush(); err != nil {
			s.abandonAppend()
			return fmt.Errorf("appending to pack %d: %w", seg.id, err)
		}
		s.curSize = seg.end
		s.packSizes[seg.id] = seg.end
		f.segs = append(f.segs, seg)
		return nil
	}
	werr := start()
	var hdr []byte
	for i := 0; werr == nil && i < len(writes); i++ {
		r := writes[i]
		n := chunkrec.Size(len(r.cidBytes), len(r.data))
		if seg.end > 0 && seg.end+n > s.cfg.PackSize {
			if werr = finish(); werr != nil {
				break
			}
			// The syncer may still have to fsync this pack (for this
			// batch or the one before): it closes the file, not us.
			seg.close = true
			s.cur = nil
			if werr = s.rotate(); werr != nil {
				break
			}
			if werr = start(); werr != nil {
				break
			}
		}
		hdr = chunkrec.AppendHeader(hdr[:0], r.cidBytes, r.data)
		// Errors stick in bw and surface at Flush. A chunk that does
		// not fit the buffer goes out as one write from the caller's
		// slice (bufio writes a large slice directly into an empty
		// buffer); flushing the header first avoids copying a 1 MiB
		// piece of the chunk through the buffer.
		bw.Write(hdr)
		if len(r.data) > bw.Available() {
			bw.Flush()
		}
		bw.Write(r.data)
		stored := now
		if r.reloc != nil {
			stored = r.reloc.stored
		}
		seg.placed = append(seg.placed, placed{r, loc{pack: seg.id, off: seg.end, length: n, stored: stored}})
		seg.end += n
	}
	if werr == nil {
		werr = finish()
	}
	if werr != nil {
		s.cfg.Logger.Warn("pack append failed", "err", werr)
		handed := make(map[*putReq]bool)
		for _, sg := range f.segs {
			for _, p := range sg.placed {
				handed[p.r] = true
			}
		}
		for _, r := range writes {
			if !handed[r] {
				r.err = werr
			}
		}
	}
}

// prepareAppend makes cur ready for an append at curSize: it cuts off what
// a failed append left and opens a new pack if there is none.
func (s *Store) prepareAppend() error {
	if s.cur != nil && s.curDirty {
		if err := s.cur.Truncate(s.curSize); err != nil {
			return fmt.Errorf("truncating pack %d after a failed append: %w", s.curID, err)
		}
		s.curDirty = false
	}
	if s.cur == nil {
		return s.rotate()
	}
	return nil
}

// abandonAppend undoes a failed write: the bytes past curSize are cut off
// (or marked to be cut off before the next append). A failed fsync is
// handled by reapFailed instead.
func (s *Store) abandonAppend() {
	s.curDirty = s.cur.Truncate(s.curSize) != nil
}

// rotate closes the current pack (if the caller left it in cur) and starts
// the next one. The new file is
// made durable (directory fsync) before anything is written into it, so an
// index entry can never name a pack that a crash makes vanish.
func (s *Store) rotate() error {
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
	id := s.nextID
	s.nextID++ // even on failure: never reuse a name a failed attempt may have left
	name := s.packPath(id)
	f, err := s.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("creating pack %d: %w", id, err)
	}
	if err := syncDir(s.fs, s.packDir); err != nil {
		f.Close()
		s.fs.Remove(name)
		return fmt.Errorf("syncing pack directory: %w", err)
	}
	s.cur, s.curID, s.curSize, s.curDirty = f, id, 0, false
	s.packSizes[id] = 0
	return nil
}
