package pack

import (
	"bytes"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/weftsync/weft/store/chunkstore"
)

// Quarantine. A chunk whose stored bytes fail verification (record CRC,
// framing or CID hash) is dropped from the index by whichever reader finds
// it: a scrub step, a Get, or GC copying it while rewriting its pack. From
// then on Has says false, Get says ErrNotFound, GC does not count it, and a
// Put of the same CID stores a fresh record (the store holds nothing under
// that CID, so there is nothing to compare it with). The bad record itself
// stays in its pack as dead space that a later GC rewrite gives back; an
// index rebuild never brings it back, since a rebuild indexes only records
// whose bytes hash to their CID.
//
// Dropping is what keeps a relay honest: a chunk it no longer has must not
// be served or counted held, and it must be wanted again so that a device
// uploads it (relay/scrub.go). Each quarantined chunk is logged once at
// Warn with its CID, counted in Stats().Corrupt, and handed to
// Config.OnQuarantine.

// FoundBy says which reader found a chunk corrupt.
type FoundBy = chunkstore.FoundBy

// The readers that quarantine.
const (
	FoundByScrub = chunkstore.FoundByScrub
	FoundByRead  = chunkstore.FoundByRead
	FoundByGC    = chunkstore.FoundByGC
)

// quarantineEntries drops the index entries kvs (key, value as read) that
// still hold the value they were read with, and returns the CIDs dropped.
// An entry a Put, a relocation or another quarantine changed meanwhile is
// left alone: what it names now was not the bytes found bad.
func (s *Store) quarantineEntries(kvs [][2][]byte) ([]cid.Cid, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	s.lockIdle()
	defer s.wmu.Unlock()
	s.imu.RLock()
	defer s.imu.RUnlock()
	b := new(leveldb.Batch)
	var dropped []cid.Cid
	var n int
	var nb int64
	for _, kv := range kvs {
		cur, err := s.db.Get(kv[0], nil)
		if err != nil || !bytes.Equal(cur, kv[1]) {
			continue
		}
		b.Delete(kv[0])
		n++
		if l, err := decodeLoc(cur); err == nil {
			nb += l.dataLen(len(kv[0]) - 1)
		}
		if c, err := cid.Cast(kv[0][1:]); err == nil {
			dropped = append(dropped, c)
		}
	}
	if n == 0 {
		return nil, nil
	}
	if err := s.write(b, syncWrite); err != nil {
		return nil, fmt.Errorf("writing chunk index: %w", err)
	}
	s.chunks.Add(-int64(n))
	s.bytesStored.Add(-nb)
	s.corrupt.Add(uint64(n))
	s.quarantined.Add(uint64(len(dropped))) // before the hook hears of them: see Stats
	return dropped, nil
}

// reportQuarantined logs each chunk quarantined and tells
// Config.OnQuarantine. Callers call it with no lock of the store held, so
// that the hook may use the store.
func (s *Store) reportQuarantined(cs []cid.Cid, by FoundBy) {
	if len(cs) == 0 {
		return
	}
	for _, c := range cs {
		s.cfg.Logger.Warn("corrupt chunk quarantined; it is no longer served or counted, and a good copy is stored when it is put again",
			"cid", c, "found_by", string(by))
	}
	if s.cfg.OnQuarantine != nil {
		s.cfg.OnQuarantine(cs, by)
	}
}

// quarantineRead drops chunk c after Get found the record at l bad, if the
// index still names that record.
func (s *Store) quarantineRead(c cid.Cid, l loc) error {
	dropped, err := s.quarantineEntries([][2][]byte{{chunkKey(c.Bytes()), l.encode()}})
	if err != nil {
		return err
	}
	s.reportQuarantined(dropped, FoundByRead)
	return nil
}
