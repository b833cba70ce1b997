package pack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// recoveryReport counts what a recovery repaired (tests read it: a store
// that was closed cleanly after recovering must need nothing the next time).
type recoveryReport struct {
	rebuilt  bool // the index was thrown away and rebuilt from the packs
	fullScan bool // every pack was scanned from its start (recoverOnce)
	indexed  int  // records found past an indexed length and indexed
	cut      int  // torn pack tails truncated
	dropped  int  // index entries dropped as not matching their pack
	healed   int  // times the index was reopened after a failed write
}

func (r recoveryReport) repaired() bool {
	return r.rebuilt || r.fullScan || r.indexed > 0 || r.cut > 0 || r.dropped > 0
}

// write writes b to the index. A failed write marks the index broken:
// goleveldb keeps the error of a failed journal write and returns it from
// every later write, so the loop reopens the index before its next batch
// (heal). The caller holds imu shared, or is the loop, the syncer or Open.
func (s *Store) write(b *leveldb.Batch, wo *opt.WriteOptions) error {
	err := s.db.Write(b, wo)
	if err != nil && !errors.Is(err, leveldb.ErrClosed) {
		s.broken.Store(true)
	}
	return err
}

// healNow asks the loop to reopen a broken index now rather than at the
// next Put, for GC and the scrub, which write the index too: it hands the
// loop a relocation of a chunk no index entry names, which writes nothing.
// It returns the heal's error if the index could not be reopened. The
// caller holds no lock the loop takes (wmu, imu).
func (s *Store) healNow() error {
	if !s.broken.Load() {
		return nil
	}
	return s.submit(&putReq{key: []byte{prefixChunk}, reloc: &loc{}})
}

// healLockTries bounds how long heal waits for readers to leave the index
// (one try per millisecond). Readers hold it for one lookup; a GC pass or a
// scrub step holds it longer, but fails fast on a broken index.
const healLockTries = 200

// heal reopens the index after a failed write and indexes the records that
// writes failed to index. The loop calls it between batches, once the
// syncer is done with the batch before, so nothing else writes the index.
//
// The failed write may have left a torn record at the end of goleveldb's
// journal, which a strict open refuses: heal opens without
// opt.StrictJournal, so goleveldb drops that record (the batch whose
// callers got an error). Everything before it in the journal was written by
// this process after Open and is replayed; goleveldb then writes it into a
// table and deletes the journal, so the next strict Open does not meet the
// torn record.
//
// If the index cannot be opened for writing (the disk is still full: a
// writable open starts a new journal), heal opens it read-only so that
// reads go on, leaves broken set, and the next batch tries again; the
// batch's callers get the error.
//
// Once the index is open, every pack is scanned from its indexed length to
// its written length and the records found there are indexed, exactly as
// Open does after a crash: they are the records of the batches whose index
// write failed, durable since their fsync (their callers got an error, and
// the chunks may or may not be stored, which Put's contract allows).
func (s *Store) heal() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.reapFailed() // packSizes then counts only fsynced bytes
	locked := false
	for range healLockTries {
		if locked = s.imu.TryLock(); locked {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !locked {
		return errors.New("chunk index in use; reopening it at the next write")
	}
	defer s.imu.Unlock()
	if err := s.db.Close(); err != nil && !errors.Is(err, leveldb.ErrClosed) {
		s.cfg.Logger.Warn("closing broken chunk index", "err", err)
	}
	path := filepath.Join(s.cfg.Dir, "index")
	o := *s.indexOpts()
	o.Strict &^= opt.StrictJournal
	db, err := s.cfg.openIndex(path, &o)
	if err != nil {
		ro := o
		ro.ReadOnly = true
		if rdb, rerr := s.cfg.openIndex(path, &ro); rerr == nil {
			s.db = rdb
		} else {
			s.cfg.Logger.Warn("reopening chunk index read-only", "err", rerr)
		}
		return fmt.Errorf("reopening chunk index: %w", err)
	}
	s.db = db
	ids := make([]uint32, 0, len(s.packSizes))
	for id := range s.packSizes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := s.reindexPack(id, s.packSizes[id]); err != nil {
			return err
		}
	}
	s.broken.Store(false)
	s.recovery.healed++
	s.cfg.Logger.Warn("chunk index reopened after a failed write")
	return nil
}

// reindexPack indexes the records of pack id between its indexed length
// and size (its written length, all fsynced) and records size as its
// indexed length. The caller holds wmu and imu.
func (s *Store) reindexPack(id uint32, size int64) error {
	var tail int64
	v, err := s.db.Get(packKey(prefixTail, id), nil)
	switch {
	case err == nil && len(v) == 8:
		tail = int64(beUint64(v))
	case err != nil && !errors.Is(err, leveldb.ErrNotFound):
		return fmt.Errorf("reading chunk index: %w", err)
	}
	if tail >= size {
		return nil
	}
	f, err := s.fs.OpenFile(s.packPath(id), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		// GC deleted it after marking it retired and failed to remove
		// its keys; Open removes them. Nothing in it is indexed.
		delete(s.packSizes, id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening pack %d: %w", id, err)
	}
	defer f.Close()
	b := new(leveldb.Batch)
	found, nb, _, err := s.indexRecords(f, id, tail, size, b)
	if err != nil {
		return fmt.Errorf("scanning pack %d: %w", id, err)
	}
	b.Put(packKey(prefixTail, id), encodeUint64(uint64(size)))
	if err := s.write(b, syncWrite); err != nil {
		return fmt.Errorf("writing chunk index: %w", err)
	}
	s.indexSyncs.Add(1)
	s.recovery.indexed += found
	s.chunks.Add(int64(found))
	s.bytesStored.Add(nb)
	return nil
}

// indexRecords scans pack f (ID id) from from to size and adds to b an
// index entry for each well-framed record of good content whose chunk the
// index lacks. It returns how many it added, their chunk bytes and where
// the bytes that hold no record begin (see scanPack).
func (s *Store) indexRecords(f File, id uint32, from, size int64, b *leveldb.Batch) (found int, bytes int64, end int64, err error) {
	now := s.cfg.Now().Unix()
	seen := make(map[string]bool)
	end, err = chunkrec.Scan(f, from, size, func(off int64, cidBytes, data []byte) error {
		c, err := cid.Cast(cidBytes)
		if err != nil || !chunkstore.Verify(c, data) {
			return nil // a well-framed record of bad content: dead bytes
		}
		key := chunkKey(cidBytes)
		if seen[string(key)] {
			return nil // the first record of a chunk wins, as in the index
		}
		has, err := s.db.Has(key, nil)
		if err != nil {
			return fmt.Errorf("reading chunk index: %w", asRebuild(err))
		}
		if !has {
			seen[string(key)] = true
			b.Put(key, loc{pack: id, off: off, length: chunkrec.Size(len(cidBytes), len(data)), stored: now}.encode())
			found++
			bytes += int64(len(data))
		}
		return nil
	})
	return found, bytes, end, err
}
