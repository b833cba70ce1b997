package pack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// Group commit. Put hands its chunk to a single commit loop and waits. The
// loop takes every request queued, waits up to CommitDelay for the other Put
// calls in progress to join, and then commits the batch in this order:
//
//  1. append the records to the current pack (one buffered write);
//  2. fsync the pack;
//  3. write the index entries and the pack's new indexed length in one
//     goleveldb batch with Sync set;
//  4. answer every caller.
//
// Because step 3 starts only after step 2 succeeded, the index never points
// at bytes that are not durable. A crash between 2 and 3 leaves records the
// index does not know; Open finds them past the pack's indexed length and
// indexes them (recover.go). A crash during 1 leaves a torn tail that Open
// truncates. No caller has been answered for either, so nothing
// acknowledged is lost.

// maxBatchBytes bounds the chunk bytes in one group commit, so that one
// fsync does not grow without limit under heavy load.
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
	key      []byte
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
	if !verifyChunk(c, data) {
		return fmt.Errorf("chunk %s: %w", c, ErrCIDMismatch)
	}
	cb := c.Bytes()
	if len(cb) > maxCIDLen {
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

// loop is the commit loop; it is the only writer of packs.
func (s *Store) loop() {
	defer close(s.loopDone)
	prev := 0 // size of the previous batch
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
		s.commit(batch)
	}
}

// gather builds a batch starting with first: everything queued, then, while
// the batch holds fewer requests than Put calls are in progress (or than
// the previous batch held), whatever arrives with gaps shorter than
// CommitDelay. A writer that stopped costs one CommitDelay once. Waiting for the callers known to be coming is
// what makes 16 writers share one fsync rather than alternate between two
// half-sized batches.
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

// commit writes a batch and answers its callers.
func (s *Store) commit(batch []*putReq) {
	s.wmu.Lock()
	err := s.commitLocked(batch)
	s.wmu.Unlock()
	for _, r := range batch {
		e := r.err
		if r.dupOf != nil {
			e = r.dupOf.err
		}
		if e == nil {
			e = err
		}
		if e == nil && r.reloc == nil {
			s.puts.Add(1)
		}
		r.done <- e
	}
}

// commitLocked runs steps 1-3 for batch. It sets a request's err for
// failures of its own and returns an error that applies to the whole batch.
func (s *Store) commitLocked(batch []*putReq) error {
	s.batches.Add(1)
	now := s.cfg.Now().Unix()
	ib := new(leveldb.Batch)
	seen := make(map[string]*putReq, len(batch))
	var writes []*putReq
	for _, r := range batch {
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
				writes = append(writes, r) // a damaged entry: store afresh
			} else if now-l.stored > refreshAge {
				l.stored = now
				ib.Put(r.key, l.encode())
			}
		case errors.Is(err, leveldb.ErrNotFound):
			if r.reloc == nil {
				writes = append(writes, r)
			}
		default:
			r.err = fmt.Errorf("reading index: %w", err)
		}
	}
	type placed struct {
		r *putReq
		l loc
	}
	var durable []placed
	if len(writes) > 0 {
		var pending []placed
		tails := make(map[uint32]int64)
		var werr error
		var bw *bufio.Writer
		var pos int64
		start := func() error {
			if err := s.prepareAppend(); err != nil {
				return err
			}
			pos = s.curSize
			if s.bw == nil {
				s.bw = bufio.NewWriterSize(nil, 1<<20)
			}
			bw = s.bw
			bw.Reset(io.NewOffsetWriter(s.cur, pos))
			return nil
		}
		// finish makes the records pending in the current pack durable.
		finish := func() error {
			if len(pending) == 0 {
				return nil
			}
			if err := bw.Flush(); err != nil {
				s.abandonAppend(false)
				return fmt.Errorf("appending to pack %d: %w", s.curID, err)
			}
			if err := s.cur.Sync(); err != nil {
				s.abandonAppend(true)
				return fmt.Errorf("syncing pack %d: %w", s.curID, err)
			}
			s.fsyncs.Add(1)
			s.curSize = pos
			s.packSizes[s.curID] = pos
			tails[s.curID] = pos
			durable = append(durable, pending...)
			pending = pending[:0]
			return nil
		}
		werr = start()
		var hdr []byte
		for i := 0; werr == nil && i < len(writes); i++ {
			r := writes[i]
			n := recordSize(len(r.cidBytes), len(r.data))
			if pos > 0 && pos+n > s.cfg.PackSize {
				if werr = finish(); werr != nil {
					break
				}
				if werr = s.rotate(); werr != nil {
					break
				}
				if werr = start(); werr != nil {
					break
				}
			}
			hdr = appendRecordHeader(hdr[:0], r.cidBytes, r.data)
			bw.Write(hdr)    // errors stick in bw and surface at Flush
			bw.Write(r.data) //
			stored := now
			if r.reloc != nil {
				stored = r.reloc.stored
			}
			pending = append(pending, placed{r, loc{pack: s.curID, off: pos, length: n, stored: stored}})
			pos += n
		}
		if werr == nil && len(pending) > 0 {
			werr = finish()
		}
		if werr != nil {
			s.cfg.Logger.Warn("pack append failed", "err", werr)
			ok := make(map[*putReq]bool, len(durable))
			for _, p := range durable {
				ok[p.r] = true
			}
			for _, r := range writes {
				if !ok[r] {
					r.err = werr
				}
			}
		}
		for _, p := range durable {
			ib.Put(p.r.key, p.l.encode())
		}
		for id, n := range tails {
			ib.Put(packKey(prefixTail, id), encodeUint64(uint64(n)))
		}
	}
	if ib.Len() == 0 {
		return nil
	}
	wo := noSyncWrite
	if len(durable) > 0 {
		wo = syncWrite
	}
	if err := s.db.Write(ib, wo); err != nil {
		// The records stay in the pack, durable: the index either holds
		// them or does not, and both are consistent.
		return fmt.Errorf("writing chunk index: %w", err)
	}
	if wo == syncWrite {
		s.indexSyncs.Add(1)
	}
	s.appends.Add(uint64(len(durable)))
	for _, p := range durable {
		if p.r.reloc == nil {
			s.chunks++
			s.bytesStored += int64(len(p.r.data))
		}
	}
	return nil
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

// abandonAppend undoes a failed append: the bytes past curSize are cut off
// (or marked to be cut off before the next append). After a failed fsync
// the page cache of the file cannot be trusted any more, so the pack is
// closed and the next append starts a new one.
func (s *Store) abandonAppend(syncFailed bool) {
	if err := s.cur.Truncate(s.curSize); err != nil {
		s.curDirty = true
	} else {
		s.curDirty = false
	}
	if syncFailed {
		s.cur.Close()
		s.cur = nil
		s.curDirty = false
	}
}

// rotate closes the current pack and starts the next one. The new file is
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
