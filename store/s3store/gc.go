package s3store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"
	"github.com/minio/minio-go/v7"
	"github.com/syndtr/goleveldb/leveldb"

	"github.com/weftsync/weft/store/chunkstore"
)

// GC drops from the index every chunk that is neither live nor younger
// than the grace period, then rewrites each object whose dead fraction
// exceeds the threshold: its live records go into new objects through the
// commit loop (keeping their ages), and the object is marked retired and
// deleted once Config.RetireGrace has passed (at this or a later GC, or
// at Open). An object left with no live record is retired without a
// rewrite. A crash at any point leaves a consistent store: an object not
// yet marked retired is still in use, and a new object the index did not
// take is indexed at Open.
func (s *Store) GC(ctx context.Context, o chunkstore.GCOptions) (chunkstore.GCResult, error) {
	var res chunkstore.GCResult
	if s.closed.Load() {
		return res, chunkstore.ErrClosed
	}
	if o.Live == nil {
		return res, fmt.Errorf("s3store: GCOptions.Live is nil")
	}
	if o.RewriteThreshold <= 0 {
		o.RewriteThreshold = chunkstore.DefaultRewriteThreshold
	}
	if o.Grace == 0 {
		o.Grace = chunkstore.DefaultGCGrace
	}
	live := make(map[string]struct{})
	for c := range o.Live {
		live[c.KeyString()] = struct{}{}
	}
	var found []cid.Cid
	defer func() {
		if len(found) > 0 && s.cfg.OnQuarantine != nil {
			s.cfg.OnQuarantine(found, chunkstore.FoundByGC)
		}
	}()
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if len(live) == 0 && !o.AllowEmptyLiveSet && s.chunks.Load() > 0 {
		return res, chunkstore.ErrEmptyLiveSet
	}
	if o.Before != nil {
		if err := o.Before(); err != nil {
			return res, err
		}
	}
	res.BytesOnDiskBefore = s.bytesOnDisk.Load()
	cutoff := s.cfg.Now().Add(-max(o.Grace, 0)).Unix()

	// Pass 1: drop dead chunks; sum live record bytes per object.
	liveBytes := make(map[uint64]int64)
	s.dropMu.Lock()
	b := new(leveldb.Batch)
	it := s.db.NewIterator(prefixRange(prefixChunk), nil)
	for it.Next() {
		l, err := decodeLoc(it.Value())
		if err != nil {
			continue
		}
		if _, ok := live[string(it.Key()[1:])]; ok || l.stored > cutoff {
			liveBytes[l.seq] += l.length
			continue
		}
		b.Delete(bytes.Clone(it.Key()))
		b.Delete(recordKey(l.seq, l.off))
		res.Dropped++
		res.DroppedBytes += dataLen(l.length, len(it.Key())-1)
	}
	it.Release()
	err := it.Error()
	if err == nil {
		err = s.db.Write(b, syncWrite)
	}
	if err == nil {
		s.chunks.Add(-int64(res.Dropped))
		s.bytesStored.Add(-res.DroppedBytes)
	} else {
		res.Dropped, res.DroppedBytes = 0, 0
	}
	s.dropMu.Unlock()
	if err != nil {
		return res, fmt.Errorf("dropping unreferenced chunks: %w", err)
	}

	// Pass 2: rewrite or retire the objects with too much dead space.
	objs, err := s.objects()
	if err != nil {
		return res, err
	}
	for _, ob := range objs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if ob.retired != 0 {
			continue
		}
		lb := liveBytes[ob.seq]
		if ob.size > 0 && float64(ob.size-lb)/float64(ob.size) <= o.RewriteThreshold {
			continue
		}
		if lb > 0 {
			bad, err := s.rewrite(ob.object)
			found = append(found, bad...)
			res.Corrupt += len(bad)
			if err != nil {
				return res, fmt.Errorf("rewriting object %s: %w", ob.name, err)
			}
		}
		if err := s.retire(ob.seq); err != nil {
			return res, err
		}
		res.PacksRewritten++
	}
	if err := s.deleteRetired(ctx); err != nil {
		return res, err
	}
	res.BytesOnDiskAfter = s.bytesOnDisk.Load()
	s.cfg.Logger.Info("chunk GC", "dropped", res.Dropped, "objects_rewritten", res.PacksRewritten,
		"bytes_before", res.BytesOnDiskBefore, "bytes_after", res.BytesOnDiskAfter)
	return res, nil
}

// listedObject is an object of the index and, if GC rewrote it, when.
type listedObject struct {
	object
	retired int64 // unix nanoseconds; 0: in use
}

// objects lists the objects the index knows, in sequence order.
func (s *Store) objects() ([]listedObject, error) {
	var out []listedObject
	it := s.db.NewIterator(prefixRange(prefixObject), nil)
	for it.Next() {
		seq, ok := parseSeqKey(it.Key())
		if !ok {
			continue
		}
		o, err := decodeObject(seq, it.Value())
		if err != nil {
			continue
		}
		out = append(out, listedObject{object: o})
	}
	it.Release()
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("reading object index: %w", err)
	}
	for i := range out {
		v, err := s.db.Get(seqKey(prefixRetired, out[i].seq), nil)
		if err == nil && len(v) == 8 {
			out[i].retired = int64(beUint64(v))
		}
	}
	slices.SortFunc(out, func(a, b listedObject) int { return cmp.Compare(a.seq, b.seq) })
	return out, nil
}

// entriesOf lists the index's records in object seq: offset -> CID bytes.
func (s *Store) entriesOf(seq uint64) (map[int64][]byte, error) {
	out := map[int64][]byte{}
	start := recordKey(seq, 0)
	it := s.db.NewIterator(prefixRange(start[:9]...), nil)
	for it.Next() {
		_, off, ok := parseRecordKey(it.Key())
		if ok {
			out[off] = bytes.Clone(it.Value())
		}
	}
	it.Release()
	return out, it.Error()
}

// rewrite copies the live records of object o into new objects. It
// returns the chunks it found corrupt (quarantined).
func (s *Store) rewrite(o object) ([]cid.Cid, error) {
	entries, err := s.entriesOf(o.seq)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	data, err := s.readObject(o.name)
	if isNoSuchKey(err) {
		return s.forgetObject(o.seq, chunkstore.FoundByGC), nil
	}
	if err != nil {
		return nil, err
	}
	var bad [][2][]byte
	var reqs []*putReq
	for off, cb := range entries {
		c, err := cid.Cast(cb)
		if err != nil {
			continue
		}
		l, raw, err := s.lookup(cb)
		if err != nil || l.seq != o.seq || l.off != off {
			continue
		}
		var chunk []byte
		ok := off+l.length <= int64(len(data))
		if ok {
			chunk, ok = checkRecord(data[off:off+l.length], c)
		}
		if !ok {
			bad = append(bad, [2][]byte{chunkKey(cb), raw})
			continue
		}
		reqs = append(reqs, &putReq{c: c, data: chunk, from: o.seq, stored: l.stored, done: make(chan error, 1)})
	}
	found := s.drop(bad, chunkstore.FoundByGC)
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
	return found, first
}

// retire marks object seq rewritten: deleted once RetireGrace has passed.
// The records it still lists are forgotten (every live one has moved).
func (s *Store) retire(seq uint64) error {
	entries, err := s.entriesOf(seq)
	if err != nil {
		return err
	}
	b := new(leveldb.Batch)
	for off := range entries {
		b.Delete(recordKey(seq, off))
	}
	b.Put(seqKey(prefixRetired, seq), encodeUint64(uint64(s.cfg.Now().UnixNano())))
	if err := s.db.Write(b, syncWrite); err != nil {
		return fmt.Errorf("retiring object %d: %w", seq, err)
	}
	return nil
}

// deleteRetired deletes the retired objects whose grace has passed.
func (s *Store) deleteRetired(ctx context.Context) error {
	objs, err := s.objects()
	if err != nil {
		return err
	}
	cutoff := s.cfg.Now().Add(-max(s.cfg.RetireGrace, 0)).UnixNano()
	for _, o := range objs {
		if o.retired == 0 || (s.cfg.RetireGrace > 0 && o.retired > cutoff) {
			continue
		}
		if err := s.removeObject(ctx, o.name); err != nil {
			// Kept marked: tried again at the next GC or Open. A
			// relay must still open and collect when its credentials
			// may not delete, or the service has a bad minute.
			s.cfg.Logger.Warn("deleting a rewritten chunk object; trying again later", "object", o.name, "err", err)
			continue
		}
		b := new(leveldb.Batch)
		b.Delete(seqKey(prefixObject, o.seq))
		b.Delete(seqKey(prefixRetired, o.seq))
		if err := s.db.Write(b, syncWrite); err != nil {
			return fmt.Errorf("forgetting deleted object %s: %w", o.name, err)
		}
		s.bytesOnDisk.Add(-o.size)
	}
	return nil
}

func (s *Store) removeObject(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	s.req.del.Add(1)
	err := s.cfg.Client.RemoveObject(ctx, s.cfg.Bucket, s.key(name), minio.RemoveObjectOptions{})
	if err != nil && !isNoSuchKey(err) {
		return fmt.Errorf("deleting object %s: %w", name, err)
	}
	return nil
}

// forgetObject drops every chunk the index has in object seq, which is
// gone or altered, and the object itself; it returns the chunks dropped,
// for the caller to report (by says who found it).
func (s *Store) forgetObject(seq uint64, by chunkstore.FoundBy) []cid.Cid {
	entries, err := s.entriesOf(seq)
	if err != nil {
		s.cfg.Logger.Warn("reading a lost object's entries", "seq", seq, "err", err)
		return nil
	}
	var kvs [][2][]byte
	for off, cb := range entries {
		l, raw, err := s.lookup(cb)
		if err == nil && l.seq == seq && l.off == off {
			kvs = append(kvs, [2][]byte{chunkKey(cb), raw})
		}
	}
	out := s.drop(kvs, by)
	b := new(leveldb.Batch)
	for off := range entries {
		b.Delete(recordKey(seq, off))
	}
	if v, err := s.db.Get(seqKey(prefixObject, seq), nil); err == nil {
		if o, err := decodeObject(seq, v); err == nil {
			s.bytesOnDisk.Add(-o.size)
		}
	}
	b.Delete(seqKey(prefixObject, seq))
	b.Delete(seqKey(prefixRetired, seq))
	if err := s.db.Write(b, syncWrite); err != nil {
		s.cfg.Logger.Warn("forgetting a lost object", "seq", seq, "err", err)
	}
	return out
}
