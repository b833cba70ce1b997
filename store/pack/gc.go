package pack

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
	"github.com/weftsync/weft/store/chunkstore"
)

// These are chunkstore's, named here for the pack store's callers.
const (
	DefaultGCGrace          = chunkstore.DefaultGCGrace
	DefaultRewriteThreshold = chunkstore.DefaultRewriteThreshold
)

type (
	// GCOptions configures one GC run.
	GCOptions = chunkstore.GCOptions
	// GCResult reports what a GC run did.
	GCResult = chunkstore.GCResult
)

// GC drops from the index every chunk that is neither live nor younger than
// the grace period, then rewrites each pack (other than the one being
// appended to) whose dead fraction exceeds the threshold: its live records
// are appended to the current pack through the commit loop (fsynced and
// indexed like a Put, the index write synced), the pack is marked retired
// in the index, and its file is deleted. A crash at any point leaves a consistent store: a
// retired pack is deleted at the next Open; a pack not yet marked retired
// is simply still in use.
//
// GC is safe to run concurrently with Put and Get; concurrent GC calls run
// one after the other. A Put of a chunk GC is dropping either completes
// first (and renews the chunk, see refreshAge) or stores it again.
func (s *Store) GC(ctx context.Context, o GCOptions) (GCResult, error) {
	if s.closed.Load() {
		return GCResult{}, ErrClosed
	}
	if o.Live == nil {
		return GCResult{}, fmt.Errorf("pack: GCOptions.Live is nil")
	}
	if o.Grace == 0 {
		o.Grace = DefaultGCGrace
	}
	if o.RewriteThreshold == 0 {
		o.RewriteThreshold = DefaultRewriteThreshold
	}
	var quarantined []cid.Cid
	defer func() { s.reportQuarantined(quarantined, FoundByGC) }() // after gcMu is released
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.healNow(); err != nil {
		return GCResult{}, err
	}

	var res GCResult
	if o.Before != nil {
		if err := o.Before(); err != nil {
			return res, err
		}
	}
	res.BytesOnDiskBefore = s.Stats().BytesOnDisk
	live := make(map[string]struct{})
	for c := range o.Live {
		live[string(c.Bytes())] = struct{}{}
	}
	if len(live) == 0 && !o.AllowEmptyLiveSet && s.Stats().Chunks > 0 {
		return res, ErrEmptyLiveSet
	}
	cutoff := s.cfg.Now().Add(-max(o.Grace, 0)).Unix()

	// Pass 1: drop dead chunks; sum live bytes per pack.
	liveBytes := make(map[uint32]int64)
	var dead [][2][]byte // key, value as read
	flush := func() error {
		n, nb, err := s.dropEntries(dead)
		res.Dropped += n
		res.DroppedBytes += nb
		dead = dead[:0]
		return err
	}
	s.imu.RLock() // released after pass 1; dropEntries nests it (see imu)
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefixChunk}), nil)
	for it.Next() {
		if err := ctx.Err(); err != nil {
			it.Release()
			s.imu.RUnlock()
			return res, err
		}
		l, err := decodeLoc(it.Value())
		if err != nil {
			continue // checkIndex and the scrub deal with damaged entries
		}
		if _, ok := live[string(it.Key()[1:])]; ok || l.stored > cutoff {
			liveBytes[l.pack] += l.length
			continue
		}
		dead = append(dead, [2][]byte{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
		if len(dead) >= 1024 {
			if err := flush(); err != nil {
				it.Release()
				s.imu.RUnlock()
				return res, err
			}
		}
	}
	it.Release()
	s.imu.RUnlock()
	if err := it.Error(); err != nil {
		return res, fmt.Errorf("reading chunk index: %w", err)
	}
	if err := flush(); err != nil {
		return res, err
	}

	// Pass 2: rewrite the packs with too much dead space.
	s.lockIdle() // no pack with records not yet indexed
	var victims []uint32
	for id, size := range s.packSizes {
		if size == 0 || (s.cur != nil && id == s.curID) {
			continue
		}
		if float64(size-liveBytes[id])/float64(size) > o.RewriteThreshold {
			victims = append(victims, id)
		}
	}
	s.wmu.Unlock()
	slices.Sort(victims)
	for _, id := range victims {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		corrupt, err := s.rewritePack(id)
		res.Corrupt += len(corrupt)
		quarantined = append(quarantined, corrupt...)
		if err != nil {
			return res, fmt.Errorf("rewriting pack %d: %w", id, err)
		}
		res.PacksRewritten++
	}
	res.BytesOnDiskAfter = s.Stats().BytesOnDisk
	s.cfg.Logger.Info("chunk GC", "dropped", res.Dropped, "packs_rewritten", res.PacksRewritten,
		"bytes_before", res.BytesOnDiskBefore, "bytes_after", res.BytesOnDiskAfter)
	return res, nil
}

// dropEntries deletes index entries that still hold the value they were
// read with (a Put or a relocation may have changed them since).
func (s *Store) dropEntries(kvs [][2][]byte) (int, int64, error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	s.lockIdle()
	defer s.wmu.Unlock()
	s.imu.RLock()
	defer s.imu.RUnlock()
	b := new(leveldb.Batch)
	var n int
	var nb int64
	for _, kv := range kvs {
		cur, err := s.db.Get(kv[0], nil)
		if err != nil || !bytes.Equal(cur, kv[1]) {
			continue
		}
		l, _ := decodeLoc(cur)
		b.Delete(kv[0])
		n++
		nb += l.dataLen(len(kv[0]) - 1)
	}
	if n == 0 {
		return 0, 0, nil
	}
	if err := s.write(b, syncWrite); err != nil {
		return 0, 0, fmt.Errorf("writing chunk index: %w", err)
	}
	s.chunks.Add(-int64(n))
	s.bytesStored.Add(-nb)
	return n, nb, nil
}

// rewritePack copies pack id's live records to the current pack and
// deletes it. It returns the corrupt records it quarantined.
func (s *Store) rewritePack(id uint32) ([]cid.Cid, error) {
	entries, err := s.entriesIn(id)
	if err != nil {
		return nil, err
	}
	var corrupt []cid.Cid
	for len(entries) > 0 {
		// Hand the loop up to maxBatchBytes at once so that the copies
		// share fsyncs.
		var reqs []*putReq
		var size int64
		for len(entries) > 0 && size < maxBatchBytes && len(reqs) < maxRelocations {
			e := entries[0]
			entries = entries[1:]
			cb := e.key[1:]
			s.rmu.RLock()
			data, err := s.readAt(e.l, cb)
			s.rmu.RUnlock()
			if err == nil {
				if c, cerr := cid.Cast(cb); cerr != nil || !chunkstore.Verify(c, data) {
					err = ErrCorrupt
				}
			}
			if err != nil {
				if !isCorrupt(err) {
					return corrupt, err
				}
				dropped, err := s.quarantineEntries([][2][]byte{{e.key, e.l.encode()}})
				if err != nil {
					return corrupt, err
				}
				corrupt = append(corrupt, dropped...)
				continue
			}
			l := e.l
			reqs = append(reqs, &putReq{cidBytes: cb, key: e.key, data: data, reloc: &l})
			size += e.l.length
		}
		if err := s.submitAll(reqs); err != nil {
			return corrupt, err
		}
	}
	// Retire the pack only if no index entry still points into it.
	left, err := s.entriesIn(id)
	if err != nil {
		return corrupt, err
	}
	if len(left) > 0 {
		return corrupt, fmt.Errorf("%d entries still point into the pack", len(left))
	}
	rb := new(leveldb.Batch)
	rb.Put(packKey(prefixRetired, id), nil)
	s.imu.RLock()
	err = s.write(rb, syncWrite)
	s.imu.RUnlock()
	if err != nil {
		return corrupt, fmt.Errorf("writing chunk index: %w", err)
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	s.dropReader(id)
	s.lockIdle()
	defer s.wmu.Unlock()
	s.imu.RLock()
	defer s.imu.RUnlock()
	return corrupt, s.removePack(id)
}

// maxRelocations bounds the copies GC hands the commit loop at once (each
// waits in its own goroutine).
const maxRelocations = 512

type indexEntry struct {
	key []byte
	l   loc
}

// entriesIn lists the index entries that point into pack id.
func (s *Store) entriesIn(id uint32) ([]indexEntry, error) {
	var out []indexEntry
	s.imu.RLock()
	defer s.imu.RUnlock()
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefixChunk}), nil)
	defer it.Release()
	for it.Next() {
		l, err := decodeLoc(it.Value())
		if err == nil && l.pack == id {
			out = append(out, indexEntry{bytes.Clone(it.Key()), l})
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("reading chunk index: %w", err)
	}
	return out, nil
}

// submitAll hands all of reqs to the commit loop at once and waits for
// every answer; it returns the first error.
func (s *Store) submitAll(reqs []*putReq) error {
	errs := make(chan error, len(reqs))
	for _, r := range reqs {
		go func() { errs <- s.submit(r) }()
	}
	var first error
	for range reqs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
