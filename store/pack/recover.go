package pack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
	"github.com/weftsync/weft/store/chunkrec"
)

// Recovery at Open, in this order:
//
//  1. Open the index with every goleveldb strict check on. If goleveldb
//     reports corruption (at open or while recovery reads the index), or
//     the index is missing while packs exist, delete it and rebuild it by
//     scanning every pack from the start.
//  2. Delete packs GC marked retired (their live records were already
//     copied and indexed elsewhere).
//  3. For each pack, scan the part past its indexed length: records that
//     check out (CRC and CID hash) are indexed; trailing bytes that are not
//     a record (a torn append) are truncated and the truncation fsynced.
//  4. Check every index entry against the packs: entries naming a missing
//     pack or reaching past a pack's end are dropped. After an unclean
//     shutdown each entry's record header is read and checked too.
//
// Every index write here is synced before Open returns.
//
// Step 3 is also what makes the unsynced index writes of the commit loop
// safe (syncer.go): after a power loss the index may lack the last batches'
// entries and their packs' new indexed lengths, but their records lie past
// the indexed lengths the index kept, in packs that are durable, and step 3
// finds them in every pack, including ones sealed since. Renewals and GC
// relocations are synced, and GC drops, retire marks, scrub marks, the
// clean mark and recovery's own writes are all synced too.

// indexOptions opens the chunk index with every strict check, so that
// goleveldb reports damage instead of silently dropping what it cannot
// read. Its write buffer is 1 MiB, not
// goleveldb's 4 MiB: an index record is a few dozen bytes, so 1 MiB holds
// tens of thousands of chunks before a flush, and a relay holds one index
// per vault it serves, idle most of the time (B7: idle memory).
var indexOptions = &opt.Options{Strict: opt.StrictAll, WriteBuffer: 1 << 20}

// smallIndexOptions is indexOptions for a store that holds little and is
// read seldom (Config.SmallIndex): a 256 KiB write buffer and block cache
// instead of 1 MiB and goleveldb's 8 MiB.
var smallIndexOptions = &opt.Options{Strict: opt.StrictAll, WriteBuffer: 256 << 10, BlockCacheCapacity: 256 << 10, OpenFilesCacheCapacity: 64}

// indexOpts returns the options the index is opened with.
func (s *Store) indexOpts() *opt.Options {
	if s.cfg.SmallIndex {
		return smallIndexOptions
	}
	return indexOptions
}

func (s *Store) recover() error {
	idxDir := filepath.Join(s.cfg.Dir, "index")
	for attempt := 0; ; attempt++ {
		rebuild := attempt > 0
		s.recovery = recoveryReport{rebuilt: rebuild}
		if rebuild {
			s.cfg.Logger.Warn("chunk index corrupt or missing, rebuilding from packs")
			if err := os.RemoveAll(idxDir); err != nil {
				return fmt.Errorf("removing corrupt chunk index: %w", err)
			}
		}
		err := s.recoverOnce(idxDir)
		if err == nil {
			// Every pack was scanned as far as it had to be: a later Open
			// needs no full scan (a marker left by a failed remove costs
			// one more, nothing else).
			if err := os.Remove(filepath.Join(s.cfg.Dir, fullScanMarker)); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.cfg.Logger.Warn("removing the full-scan marker", "err", err)
			}
			return nil
		}
		if s.db != nil {
			s.db.Close()
			s.db = nil
		}
		if attempt > 0 || !errors.Is(err, errRebuild) {
			return err
		}
	}
}

// errRebuild asks recover to throw the index away and scan the packs.
var errRebuild = errors.New("index needs rebuilding")

func asRebuild(err error) error {
	if lerrors.IsCorrupted(err) || errors.Is(err, errRebuild) {
		return fmt.Errorf("%v: %w", err, errRebuild)
	}
	return err
}

func (s *Store) recoverOnce(idxDir string) error {
	packs, err := s.listPacks()
	if err != nil {
		return err
	}
	s.packSizes = make(map[uint32]int64)
	// The index's last writes may be lost to a power failure: a batch's
	// index write is not synced (syncer.go). While goleveldb writes one
	// journal, what survives is a prefix of what was written, and the
	// indexed lengths tell where each pack's unindexed records begin. When
	// goleveldb switches to a new journal, it closes the old one without
	// syncing it and syncs it into a table only later; a crash in between
	// can lose the old journal's tail and keep writes in the new one, such
	// as a later indexed length, so that records before that length were
	// never indexed. Two journals at open are the mark of that window (a
	// clean switch deletes the old one), and Open then scans every pack
	// from its start.
	//
	// Opening the index replays and deletes the old journal, so the mark
	// would be gone if this Open stopped before its scan finished (a
	// crash, a full disk): a marker file, fsynced before the index opens
	// and removed once recovery is done, keeps the decision.
	marker := filepath.Join(s.cfg.Dir, fullScanMarker)
	_, merr := os.Stat(marker)
	if n, err := countJournals(idxDir); err != nil {
		return err
	} else if n > 1 || merr == nil {
		s.cfg.Logger.Warn("chunk index may lack records of unsynced writes: scanning every pack", "journals", n)
		s.recovery.fullScan = true
		if merr != nil {
			if err := writeMarker(marker); err != nil {
				return err
			}
		}
	}
	db, err := s.cfg.openIndex(idxDir, s.indexOpts())
	if err != nil {
		if lerrors.IsCorrupted(err) {
			return fmt.Errorf("opening chunk index: %v: %w", err, errRebuild)
		}
		return fmt.Errorf("opening chunk index: %w", err)
	}
	s.db = db
	format, err := db.Get(keyFormat, nil)
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		if len(packs) > 0 {
			// The packs outlived their index.
			tails, _ := s.countPrefix(prefixTail)
			if tails > 0 {
				return fmt.Errorf("chunk index lost its format key: %w", errRebuild)
			}
		}
	case err != nil:
		return fmt.Errorf("reading chunk index: %w", asRebuild(err))
	case !bytes.Equal(format, []byte{indexFormat}):
		return fmt.Errorf("chunk index format %x, want %d", format, indexFormat)
	}
	_, err = db.Get(keyClean, nil)
	clean := err == nil
	if err != nil && !errors.Is(err, leveldb.ErrNotFound) {
		return fmt.Errorf("reading chunk index: %w", asRebuild(err))
	}
	b := new(leveldb.Batch)
	b.Put(keyFormat, []byte{indexFormat})
	b.Delete(keyClean)
	if err := db.Write(b, syncWrite); err != nil {
		return fmt.Errorf("writing chunk index: %w", asRebuild(err))
	}

	packs, err = s.deleteRetired(packs)
	if err != nil {
		return err
	}
	s.nextID = 0
	for _, id := range packs {
		if err := s.recoverPack(id); err != nil {
			return err
		}
		s.nextID = max(s.nextID, id+1)
	}
	if err := s.checkIndex(clean); err != nil {
		return err
	}
	// Never reuse the ID of a pack the index still remembers.
	it := db.NewIterator(util.BytesPrefix([]byte{prefixTail}), nil)
	for it.Next() {
		if len(it.Key()) == 5 {
			s.nextID = max(s.nextID, beUint32(it.Key()[1:])+1)
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return fmt.Errorf("reading chunk index: %w", asRebuild(err))
	}
	if n := len(packs); n > 0 {
		last := packs[n-1]
		if s.packSizes[last] < s.cfg.PackSize {
			f, err := s.fs.OpenFile(s.packPath(last), os.O_RDWR, 0)
			if err != nil {
				return fmt.Errorf("opening pack %d: %w", last, err)
			}
			s.cur, s.curID, s.curSize = f, last, s.packSizes[last]
		}
	}
	return nil
}

// countJournals counts goleveldb's journal files in the index directory.
// fullScanMarker is the file in the store's directory that says the next
// Open must scan every pack from its start (see recoverOnce).
const fullScanMarker = "fullscan"

// writeMarker creates the file at p and makes it durable.
func writeMarker(p string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("marking a full pack scan: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("marking a full pack scan: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("marking a full pack scan: %w", err)
	}
	d, err := os.Open(filepath.Dir(p))
	if err != nil {
		return fmt.Errorf("marking a full pack scan: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("marking a full pack scan: %w", err)
	}
	return nil
}

func countJournals(idxDir string) (int, error) {
	ents, err := os.ReadDir(idxDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing chunk index: %w", err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") && e.Name() != "LOG" {
			n++
		}
	}
	return n, nil
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// listPacks returns the IDs of the pack files, in ascending order.
func (s *Store) listPacks() ([]uint32, error) {
	ents, err := s.fs.ReadDir(s.packDir)
	if err != nil {
		return nil, fmt.Errorf("listing packs: %w", err)
	}
	var ids []uint32
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || len(name) != 8 {
			continue
		}
		id, err := strconv.ParseUint(name, 16, 32)
		if err != nil {
			continue
		}
		ids = append(ids, uint32(id))
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *Store) countPrefix(p byte) (int, error) {
	it := s.db.NewIterator(util.BytesPrefix([]byte{p}), nil)
	defer it.Release()
	n := 0
	for it.Next() {
		n++
	}
	return n, it.Error()
}

// deleteRetired removes the packs GC rewrote and returns the remaining IDs.
func (s *Store) deleteRetired(packs []uint32) ([]uint32, error) {
	var retired []uint32
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefixRetired}), nil)
	for it.Next() {
		if len(it.Key()) == 5 {
			retired = append(retired, beUint32(it.Key()[1:]))
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("reading chunk index: %w", asRebuild(err))
	}
	for _, id := range retired {
		if err := s.removePack(id); err != nil {
			return nil, err
		}
		packs = slices.DeleteFunc(packs, func(p uint32) bool { return p == id })
	}
	return packs, nil
}

// removePack deletes a retired pack's file, then its index keys.
func (s *Store) removePack(id uint32) error {
	if err := s.fs.Remove(s.packPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing pack %d: %w", id, err)
	}
	if err := syncDir(s.fs, s.packDir); err != nil {
		return fmt.Errorf("syncing pack directory: %w", err)
	}
	b := new(leveldb.Batch)
	b.Delete(packKey(prefixTail, id))
	b.Delete(packKey(prefixRetired, id))
	if err := s.write(b, syncWrite); err != nil {
		return fmt.Errorf("writing chunk index: %w", err)
	}
	delete(s.packSizes, id)
	return nil
}

// recoverPack indexes the records past pack id's indexed length and cuts
// off a torn tail.
func (s *Store) recoverPack(id uint32) error {
	f, err := s.fs.OpenFile(s.packPath(id), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("opening pack %d: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat pack %d: %w", id, err)
	}
	size := fi.Size()
	var tail int64
	v, err := s.db.Get(packKey(prefixTail, id), nil)
	switch {
	case err == nil && len(v) == 8:
		tail = int64(beUint64(v))
	case err == nil:
		return fmt.Errorf("pack %d: indexed length of %d bytes: %w", id, len(v), errRebuild)
	case !errors.Is(err, leveldb.ErrNotFound):
		return fmt.Errorf("reading chunk index: %w", asRebuild(err))
	}
	if tail > size {
		// The disk lost bytes it had acknowledged. checkIndex drops the
		// entries that point past the end; scanning the whole pack finds
		// where its last whole record ends (and may bring back chunks GC
		// had dropped, which the next GC drops again).
		s.cfg.Logger.Error("pack shorter than its indexed length", "pack", id, "size", size, "indexed", tail)
		tail = 0
	}
	if s.recovery.fullScan {
		tail = 0 // see recoverOnce
	}
	b := new(leveldb.Batch)
	found, _, end, err := s.indexRecords(f, id, tail, size, b)
	if err != nil {
		return fmt.Errorf("scanning pack %d: %w", id, err)
	}
	if end < size {
		s.cfg.Logger.Warn("truncating torn pack tail", "pack", id, "at", end, "size", size)
		s.recovery.cut++
		if err := f.Truncate(end); err != nil {
			return fmt.Errorf("truncating pack %d: %w", id, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing pack %d: %w", id, err)
		}
		size = end
	}
	s.packSizes[id] = size
	if found == 0 && tail == size && v != nil {
		return nil // nothing changed: no fsync, no index write
	}
	if found > 0 {
		s.recovery.indexed += found
		s.cfg.Logger.Info("indexed records missing from the index", "pack", id, "records", found)
		// The process that wrote them may have died before its fsync.
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing pack %d: %w", id, err)
		}
	}
	b.Put(packKey(prefixTail, id), encodeUint64(uint64(size)))
	if err := s.db.Write(b, syncWrite); err != nil {
		return fmt.Errorf("writing chunk index: %w", asRebuild(err))
	}
	return nil
}

func beUint64(b []byte) uint64 {
	return uint64(beUint32(b[0:4]))<<32 | uint64(beUint32(b[4:8]))
}

// checkIndex drops index entries that cannot be right and counts the rest.
// With deep set (after an unclean shutdown) it also reads each entry's
// record header.
func (s *Store) checkIndex(clean bool) error {
	deep := !clean
	readers := make(map[uint32]File)
	defer func() {
		for _, f := range readers {
			f.Close()
		}
	}()
	b := new(leveldb.Batch)
	s.chunks.Store(0)
	s.bytesStored.Store(0)
	it := s.db.NewIterator(util.BytesPrefix([]byte{prefixChunk}), nil)
	defer it.Release()
	for it.Next() {
		cidBytes := it.Key()[1:]
		l, err := decodeLoc(it.Value())
		ok := err == nil
		if ok {
			size, exists := s.packSizes[l.pack]
			ok = exists && l.off >= 0 && l.off+l.length <= size && l.dataLen(len(cidBytes)) >= 0
		}
		if ok && deep {
			f := readers[l.pack]
			if f == nil {
				if f, err = s.fs.OpenFile(s.packPath(l.pack), os.O_RDONLY, 0); err != nil {
					return fmt.Errorf("opening pack %d: %w", l.pack, err)
				}
				readers[l.pack] = f
			}
			ok, err = headerMatches(f, l, cidBytes)
			if err != nil {
				return err
			}
		}
		if !ok {
			s.cfg.Logger.Warn("dropping index entry that does not match its pack", "cid", fmt.Sprintf("%x", cidBytes))
			s.recovery.dropped++
			b.Delete(bytes.Clone(it.Key()))
			continue
		}
		s.chunks.Add(1)
		s.bytesStored.Add(l.dataLen(len(cidBytes)))
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("reading chunk index: %w", asRebuild(err))
	}
	if b.Len() > 0 {
		if err := s.db.Write(b, syncWrite); err != nil {
			return fmt.Errorf("writing chunk index: %w", asRebuild(err))
		}
	}
	return nil
}

// headerMatches reads the header of the record l names and checks that it
// frames a record of l.length bytes holding cidBytes.
func headerMatches(f io.ReaderAt, l loc, cidBytes []byte) (bool, error) {
	h := make([]byte, chunkrec.HeaderSize+len(cidBytes))
	if _, err := f.ReadAt(h, l.off); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("reading pack %d: %w", l.pack, err)
	}
	hd, err := chunkrec.ParseHeader(h)
	if err != nil || hd.Size() != l.length || hd.CIDLen != len(cidBytes) {
		return false, nil
	}
	return bytes.Equal(h[chunkrec.HeaderSize:], cidBytes), nil
}
