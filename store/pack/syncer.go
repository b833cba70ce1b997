package pack

import (
	"fmt"

	"github.com/syndtr/goleveldb/leveldb"
)

// flight is a batch between stage 1 and its answer (see commit.go).
type flight struct {
	batch []*putReq
	keys  map[string]bool // the index keys the batch names
	segs  []*segment      // what stage 1 appended, one segment per pack, in order
	ib    *leveldb.Batch  // index changes decided in stage 1 (renewals)
	sync  bool            // write ib synced: it holds a renewal (see stage2)
	done  chan struct{}   // closed once every caller is answered
}

// names reports whether batch names a chunk f names too.
func (f *flight) names(batch []*putReq) bool {
	for _, r := range batch {
		if f.keys[string(r.key)] {
			return true
		}
	}
	return false
}

// segment is the records a batch appended to one pack: bytes [start, end)
// of pack id.
type segment struct {
	f          File
	id         uint32
	start, end int64
	placed     []placed
	close      bool // the loop rotated away from the pack: close f after its fsync
}

// placed is a request and where its record went.
type placed struct {
	r *putReq
	l loc
}

// failedPack is a pack whose fsync failed, handed back to the loop.
type failedPack struct {
	f    File
	id   uint32
	size int64 // its length before the failed segment: all synced
}

// syncer is stage 2: for each flight, in order, it fsyncs every segment,
// indexes the records of those that synced, and answers the callers.
func (s *Store) syncer(flights <-chan *flight, done chan<- struct{}) {
	defer close(done)
	// Files whose fsync failed. Once an fsync failed, the kernel may have
	// dropped dirty pages and a later fsync may report success anyway, so
	// nothing written to the file is trusted again.
	poisoned := make(map[File]bool)
	for f := range flights {
		s.stage2(f, poisoned)
	}
}

// stage2 runs steps 3 to 5 for f.
func (s *Store) stage2(f *flight, poisoned map[File]bool) {
	var durable []placed
	for _, seg := range f.segs {
		var err error
		switch {
		case poisoned[seg.f]:
			err = fmt.Errorf("pack %d: an earlier fsync of it failed", seg.id)
		case len(seg.placed) == 0:
			// Only here to be closed.
		default:
			if err = seg.f.Sync(); err != nil {
				err = fmt.Errorf("syncing pack %d: %w", seg.id, err)
				s.cfg.Logger.Warn("pack append failed", "err", err)
				poisoned[seg.f] = true
				s.pmu.Lock()
				s.failed = append(s.failed, failedPack{f: seg.f, id: seg.id, size: seg.start})
				s.pmu.Unlock()
			}
		}
		if err != nil {
			// The loop truncates and closes a poisoned file (reapFailed).
			for _, p := range seg.placed {
				p.r.err = err
			}
			continue
		}
		if len(seg.placed) > 0 {
			s.fsyncs.Add(1)
			durable = append(durable, seg.placed...)
			f.ib.Put(packKey(prefixTail, seg.id), encodeUint64(uint64(seg.end)))
		}
		if seg.close {
			seg.f.Close()
		}
	}
	var err error
	if f.ib.Len() > 0 {
		wo := noSyncWrite
		for _, p := range durable {
			f.ib.Put(p.r.key, p.l.encode())
			if p.r.reloc != nil {
				f.sync = true
			}
		}
		// The index write of a batch of new records is not synced: the
		// records are durable once their pack's fsync returned, and the
		// index entries and indexed lengths are derived from them. If a
		// power loss takes this write (and later unsynced ones), the
		// index keeps the packs' older indexed lengths, and Open scans
		// each pack from its indexed length and indexes every record it
		// finds there (recover.go), sealed packs included. That holds as
		// long as what the index keeps is a prefix of what was written;
		// where goleveldb cannot promise that (a journal switch), Open
		// scans every pack from the start (see recoverOnce). Two kinds of
		// change are not derived from a pack and are synced here: a
		// renewal (a Put of a chunk already held moves its stored time,
		// which keeps GC away; Open could not find it again) and a GC
		// relocation (GC then retires the old pack, and the new entries
		// must be durable before that, whatever goleveldb's ordering).
		if f.sync {
			wo = syncWrite
		}
		if err = s.write(f.ib, wo); err != nil {
			// The records stay in the pack, durable: the index either
			// holds them or does not, and both are consistent. heal
			// indexes them when it reopens the index.
			err = fmt.Errorf("writing chunk index: %w", err)
		} else {
			if wo == syncWrite {
				s.indexSyncs.Add(1)
			}
			s.appends.Add(uint64(len(durable)))
			for _, p := range durable {
				if p.r.reloc == nil {
					s.chunks.Add(1)
					s.bytesStored.Add(int64(len(p.r.data)))
				}
			}
		}
	}
	for _, r := range f.batch {
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
	s.pmu.Lock()
	s.syncing--
	s.idle.Broadcast()
	s.pmu.Unlock()
	close(f.done)
}

// reapFailed truncates each pack whose fsync failed back to what was
// synced and closes it; the next append starts a new pack. A failed
// truncate is left to Open, which cuts or re-indexes what lies past a
// pack's indexed length. The caller holds wmu.
func (s *Store) reapFailed() {
	s.pmu.Lock()
	failed := s.failed
	s.failed = nil
	s.pmu.Unlock()
	for _, fp := range failed {
		fp.f.Truncate(fp.size)
		fp.f.Close()
		s.packSizes[fp.id] = fp.size
		if fp.f == s.cur {
			s.cur, s.curDirty = nil, false
		}
	}
}

// lockIdle locks wmu and waits until no batch is between stage 1 and its
// answer. Code that drops index entries or picks packs to delete uses it
// instead of wmu.Lock: it then sees the index as the loop does between
// batches, with no Put holding a promise that a chunk is present and no
// record appended but not yet indexed, and no pack left to cut back after
// a failed fsync. Unlock with wmu.Unlock.
func (s *Store) lockIdle() {
	s.wmu.Lock()
	s.pmu.Lock()
	for s.syncing > 0 {
		s.idle.Wait()
	}
	s.pmu.Unlock()
	s.reapFailed()
}
