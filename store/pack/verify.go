package pack

import (
	"fmt"
	"os"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb/util"
	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Chunks   int      // index entries whose record checks out
	Records  int      // well-framed records found by scanning the packs
	Problems []string // index entries that do not check out, and packs that do not scan to their end
}

// Verify checks that the index and the packs agree: every index entry
// names a record that holds its chunk with the right hash, and every pack
// holds nothing but well-framed records up to its end. It reads
// everything and holds off writers while it runs; it is meant for tests and
// for an operator's "weft relay verify", not for routine use (the scrub is).
func (s *Store) Verify() (VerifyReport, error) {
	var rep VerifyReport
	if s.closed.Load() {
		return rep, ErrClosed
	}
	// Lock order everywhere: gcMu, then rmu, then wmu (here through lockIdle).
	s.rmu.RLock()
	defer s.rmu.RUnlock()
	s.lockIdle()
	defer s.wmu.Unlock()
	s.imu.RLock()
	defer s.imu.RUnlock()
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefixChunk}), nil)
	for it.Next() {
		cb := it.Key()[1:]
		c, err := cid.Cast(cb)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("index key %x is not a CID", cb))
			continue
		}
		l, err := decodeLoc(it.Value())
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		data, err := s.readAt(l, cb)
		if err == nil && !chunkstore.Verify(c, data) {
			err = ErrCorrupt
		}
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		rep.Chunks++
	}
	it.Release()
	if err := it.Error(); err != nil {
		return rep, fmt.Errorf("reading chunk index: %w", err)
	}
	for id, size := range s.packSizes {
		f, err := s.fs.OpenFile(s.packPath(id), os.O_RDONLY, 0)
		if err != nil {
			return rep, fmt.Errorf("opening pack %d: %w", id, err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return rep, fmt.Errorf("stat pack %d: %w", id, err)
		}
		if fi.Size() != size {
			rep.Problems = append(rep.Problems, fmt.Sprintf("pack %d is %d bytes, store says %d", id, fi.Size(), size))
		}
		end, err := chunkrec.Scan(f, 0, size, func(int64, []byte, []byte) error {
			rep.Records++
			return nil
		})
		f.Close()
		if err != nil {
			return rep, fmt.Errorf("scanning pack %d: %w", id, err)
		}
		if end != size {
			rep.Problems = append(rep.Problems, fmt.Sprintf("pack %d: bytes after offset %d hold no record", id, end))
		}
	}
	return rep, nil
}
