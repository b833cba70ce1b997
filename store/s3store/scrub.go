package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"

	"github.com/weftsync/weft/store/chunkstore"
)

// ScrubStep re-verifies whole objects, in sequence order after where the
// previous step stopped (a cursor kept in the index, so a pass survives
// restarts), until it has read maxBytes or reached the last object. Each
// object costs one GET; every record the index uses in it is checked for
// framing and re-hashed against its CID, and what fails is quarantined.
// An object that is gone has all its chunks quarantined. At the end of a
// pass its time is recorded (LastScrub) and the next step starts over.
// Other errors stop the step and are returned; nothing is dropped for
// them.
func (s *Store) ScrubStep(maxBytes int64) (chunkstore.ScrubStepResult, error) {
	var res chunkstore.ScrubStepResult
	if s.closed.Load() {
		return res, chunkstore.ErrClosed
	}
	defer func() {
		if len(res.Corrupt) > 0 && s.cfg.OnQuarantine != nil {
			s.cfg.OnQuarantine(res.Corrupt, chunkstore.FoundByScrub)
		}
	}()
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	var cursor uint64
	if v, err := s.db.Get(keyScrubCursor, nil); err == nil && len(v) == 8 {
		cursor = beUint64(v)
	}
	objs, err := s.objects()
	if err != nil {
		return res, err
	}
	var bad [][2][]byte
	done := true
	for _, o := range objs {
		if o.seq <= cursor || o.retired != 0 {
			continue
		}
		if res.Bytes >= maxBytes && res.Checked > 0 {
			done = false
			break
		}
		entries, err := s.entriesOf(o.seq)
		if err != nil {
			return res, err
		}
		cursor = o.seq
		if len(entries) == 0 {
			continue
		}
		data, err := s.readObject(o.name)
		if isNoSuchKey(err) {
			res.Corrupt = append(res.Corrupt, s.forgetObject(o.seq, chunkstore.FoundByScrub)...)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("scrubbing object %s: %w", o.name, err)
		}
		for off, cb := range entries {
			l, raw, err := s.lookup(cb)
			if err != nil || l.seq != o.seq || l.off != off {
				continue
			}
			c, err := cid.Cast(cb)
			ok := err == nil && off+l.length <= int64(len(data))
			if ok {
				_, ok = checkRecord(data[off:off+l.length], c)
			}
			if !ok {
				bad = append(bad, [2][]byte{chunkKey(cb), raw})
			}
			res.Checked++
			res.Bytes += l.length
		}
	}
	res.Corrupt = append(res.Corrupt, s.drop(bad, chunkstore.FoundByScrub)...)
	s.scrubChunks.Add(uint64(res.Checked))
	s.scrubBytes.Add(uint64(res.Bytes))
	b := new(leveldb.Batch)
	if done {
		res.PassDone = true
		b.Delete(keyScrubCursor)
		b.Put(keyScrubLast, encodeUint64(uint64(s.cfg.Now().UnixNano())))
	} else {
		b.Put(keyScrubCursor, encodeUint64(cursor))
	}
	if err := s.db.Write(b, syncWrite); err != nil {
		return res, fmt.Errorf("writing scrub cursor: %w", err)
	}
	return res, nil
}

// ScrubPass verifies every chunk now: it moves the cursor back to the
// first object and runs steps of stepBytes (zero: DefaultScrubStep) until
// the end. It returns the steps' totals and stops early, with what it did
// so far, when ctx ends or a step fails.
func (s *Store) ScrubPass(ctx context.Context, stepBytes int64) (chunkstore.ScrubStepResult, error) {
	if s.closed.Load() {
		return chunkstore.ScrubStepResult{}, chunkstore.ErrClosed
	}
	s.gcMu.Lock()
	err := s.db.Delete(keyScrubCursor, syncWrite)
	s.gcMu.Unlock()
	if err != nil && !errors.Is(err, leveldb.ErrNotFound) {
		return chunkstore.ScrubStepResult{}, fmt.Errorf("writing scrub cursor: %w", err)
	}
	return chunkstore.ScrubSteps(ctx, stepBytes, s.ScrubStep)
}
