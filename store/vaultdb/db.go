package vaultdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// Config is what OpenConfig needs.
type Config struct {
	// Dir is the vault's directory; it is created if missing.
	Dir string
	// Vault is the vault whose entries this DB holds; entries of another
	// vault are rejected.
	Vault keys.VaultID
	// FS carries the log files' IO; nil means OSFS. Tests inject faults.
	FS FS
	// SegmentSize is the size at which a log segment is closed; 0 means
	// DefaultSegmentSize. A record larger than it gets a segment of its own.
	SegmentSize int64
	// Logger receives a summary of recovery at Open; nil discards it.
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Dir == "" {
		return errors.New("config: no directory")
	}
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.SegmentSize == 0 {
		c.SegmentSize = DefaultSegmentSize
	}
	if c.SegmentSize < 0 {
		return fmt.Errorf("config: segment size %d", c.SegmentSize)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// DB is one vault's durable state. It is safe for concurrent use.
type DB struct {
	cfg Config
	// idxMu guards idx: readers hold it shared while they use the index;
	// the commit loop takes it (TryLock, never waiting) only to reopen a
	// broken index (heal).
	idxMu   sync.RWMutex
	idx     *leveldb.DB
	readers *segReaders
	members *memberLog
	lock    *os.File

	w        *segWriter // owned by the commit loop
	reqs     chan *appendReq
	quit     chan struct{}
	loopDone chan struct{}

	// mu guards the fields below.
	mu     sync.RWMutex
	heads  map[keys.DeviceID]entry.Head
	closed bool
	broken error // set when an index write failed after a segment fsync
	stats  Stats

	// unindexed is what the failed index write owed the logs (locations,
	// CIDs and heads of entries durable in a segment); heal writes it.
	// Owned by the commit loop.
	unindexed      *leveldb.Batch
	unindexedHeads map[keys.DeviceID]entry.Head

	// verified is the log prefix verified at Open (checkpoint.go) and
	// whole says it covered the log to its end, so that Close may extend
	// it by what Append wrote since; saved is the prefix the checkpoint
	// file holds. Used by Open and Close only.
	verified, saved []segSum
	whole           bool
}

// Stats counts the work Append has done since Open.
type Stats struct {
	// Appends counts Append, AppendWith and Commit calls that succeeded.
	Appends int64
	// Entries counts entries written (duplicates excluded).
	Entries int64
	// Commits counts group commits: one segment write and one index batch
	// shared by every caller queued at the time.
	Commits int64
	// SegmentSyncs counts fsyncs of segment files and of the log directory;
	// IndexSyncs counts synced goleveldb batches (each one fsync of its
	// journal). Fsyncs per append is (SegmentSyncs+IndexSyncs)/Appends.
	SegmentSyncs, IndexSyncs int64
}

// Open opens the vault database in dir with the default configuration.
// See OpenConfig.
func Open(dir string, vault keys.VaultID) (*DB, OpenReport, error) {
	return OpenConfig(Config{Dir: dir, Vault: vault})
}

// OpenConfig locks cfg.Dir, reads and verifies the logs (truncating a torn
// tail of the last segment), checks the index against them and rebuilds it
// if needed, and starts the commit loop. The report says what it found; a
// nil error with damage in the report means the DB is usable and the
// damaged entries are missing (fetch them again). It fails on IO errors,
// when another process holds the directory (ErrLocked), and when a rebuild
// fails.
func OpenConfig(cfg Config) (*DB, OpenReport, error) {
	var rep OpenReport
	if err := cfg.validate(); err != nil {
		return nil, rep, fmt.Errorf("opening vault database: %w", err)
	}
	logDir := filepath.Join(cfg.Dir, "log")
	if err := cfg.FS.MkdirAll(logDir, 0o700); err != nil {
		return nil, rep, fmt.Errorf("creating %s: %w", logDir, err)
	}
	if err := syncDir(cfg.FS, cfg.Dir); err != nil {
		return nil, rep, fmt.Errorf("syncing %s: %w", cfg.Dir, err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, rep, err
	}
	db, err := open(cfg, lock, &rep)
	if err != nil {
		lock.Close()
		return nil, rep, fmt.Errorf("opening vault database %s: %w", cfg.Dir, err)
	}
	if rep.Rebuilt || len(rep.Damage) > 0 || rep.Dropped > 0 || rep.MemberDropped > 0 {
		cfg.Logger.Warn("vault database recovered", "dir", cfg.Dir, "rebuilt", rep.Rebuilt,
			"reason", rep.RebuildReason, "damage", len(rep.Damage), "dropped", rep.Dropped,
			"member_dropped", rep.MemberDropped)
	}
	return db, rep, nil
}

func open(cfg Config, lock *os.File, rep *OpenReport) (*DB, error) {
	logDir := filepath.Join(cfg.Dir, "log")
	members, err := openMemberLog(cfg.FS, cfg.Dir, cfg.Vault, rep)
	if err != nil {
		return nil, err
	}
	scan, err := scanLogs(cfg.FS, logDir, cfg.Vault, rep)
	if err != nil {
		members.close()
		return nil, err
	}
	rep.Entries = len(scan.entries)
	idx, err := openIndex(cfg.Dir, scan, rep)
	if err != nil {
		members.close()
		return nil, err
	}
	w, err := newSegWriter(cfg.FS, logDir, cfg.SegmentSize, scan.last, scan.lastEnd)
	if err != nil {
		idx.Close()
		members.close()
		return nil, err
	}
	db := &DB{
		cfg:      cfg,
		idx:      idx,
		readers:  &segReaders{fsys: cfg.FS, dir: logDir},
		members:  members,
		lock:     lock,
		w:        w,
		reqs:     make(chan *appendReq),
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
		heads:    scan.heads,
		verified: scan.verified.segs,
		whole:    scan.verified.complete(),
	}
	if scan.loaded != nil {
		db.saved = scan.loaded.segs
	}
	// Record what this Open verified, so that a crash before Close still
	// spares the next Open the signatures checked now.
	db.saveCheckpoint(db.verified)
	go db.commitLoop()
	return db, nil
}

// saveCheckpoint writes segs as the log checkpoint unless the file already
// holds them. A failure costs only speed (the next Open verifies more), so
// it is logged, not returned.
func (db *DB) saveCheckpoint(segs []segSum) {
	if slices.Equal(segs, db.saved) {
		return
	}
	if err := saveCheckpoint(db.cfg.FS, db.cfg.Dir, checkpoint{vault: db.cfg.Vault, segs: segs}); err != nil {
		db.cfg.Logger.Warn("log checkpoint not saved", "dir", db.cfg.Dir, "err", err)
		return
	}
	db.saved = segs
}

// closeCheckpoint extends the verified prefix by what Append wrote since
// Open (every entry Append writes was validated first) and saves it. It
// runs after the commit loop stopped, so the writer is idle.
func (db *DB) closeCheckpoint() {
	if !db.whole || db.w.seg == 0 {
		return
	}
	logDir := filepath.Join(db.cfg.Dir, "log")
	size := func(n uint32) (int64, error) {
		if n == db.w.seg {
			return db.w.size, nil
		}
		f, err := db.cfg.FS.OpenFile(filepath.Join(logDir, segName(n)), os.O_RDONLY, 0)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
	segs, err := extend(db.cfg.FS, logDir, db.verified, db.w.seg, size)
	if err != nil {
		db.cfg.Logger.Warn("log checkpoint not saved", "dir", db.cfg.Dir, "err", err)
		return
	}
	db.saveCheckpoint(segs)
}

// Close stops the commit loop (Appends in progress finish first or get
// ErrClosed) and closes every file. Calls after the first return nil.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	db.mu.Unlock()
	close(db.quit)
	<-db.loopDone
	db.closeCheckpoint()
	ierr := db.idx.Close()
	if errors.Is(ierr, leveldb.ErrClosed) {
		ierr = nil // a heal that could not reopen it closed it
	}
	errs := []error{db.w.close(), ierr, db.members.close()}
	db.readers.close()
	errs = append(errs, db.lock.Close())
	return errors.Join(errs...)
}

// Stats returns the counters.
func (db *DB) Stats() Stats {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.stats
}

// Head returns author's head: the zero Head if no entry of author is held.
func (db *DB) Head(author keys.DeviceID) entry.Head {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.heads[author]
}

// Heads returns every author's head. The map is the caller's.
func (db *DB) Heads() map[keys.DeviceID]entry.Head {
	db.mu.RLock()
	defer db.mu.RUnlock()
	out := make(map[keys.DeviceID]entry.Head, len(db.heads))
	for a, h := range db.heads {
		out[a] = h
	}
	return out
}

// Get returns author's entry seq: ErrNotFound if it is not held, an error
// wrapping ErrCorrupt if its bytes no longer check out (never the bytes).
// The entry was verified at Open or Append, and Get checks that the bytes
// read hash to the CID recorded then.
func (db *DB) Get(author keys.DeviceID, seq uint64) (*entry.Entry, error) {
	db.idxMu.RLock()
	defer db.idxMu.RUnlock()
	v, err := db.idx.Get(locKey(author, seq), nil)
	if err != nil {
		return nil, db.readErr(fmt.Sprintf("entry %s seq %d", author.Short(), seq), err)
	}
	e, err := db.read(v)
	if err != nil {
		return nil, fmt.Errorf("entry %s seq %d: %w", author.Short(), seq, err)
	}
	return e, nil
}

// EntryCID returns the CID of author's entry seq as the index records it,
// without reading the entry: ErrNotFound if it is not held. A caller that
// remembers an entry by its CID (a snapshot of what it derived from the
// logs) checks with it that the log still holds that very entry.
func (db *DB) EntryCID(author keys.DeviceID, seq uint64) (cid.Cid, error) {
	db.idxMu.RLock()
	defer db.idxMu.RUnlock()
	v, err := db.idx.Get(locKey(author, seq), nil)
	if err != nil {
		return cid.Undef, db.readErr(fmt.Sprintf("entry %s seq %d", author.Short(), seq), err)
	}
	_, c, err := parseLocValue(v)
	if err != nil {
		return cid.Undef, fmt.Errorf("entry %s seq %d: %w", author.Short(), seq, err)
	}
	return c, nil
}

// GetByCID returns the entry whose CID is c, like Get.
func (db *DB) GetByCID(c cid.Cid) (*entry.Entry, error) {
	db.idxMu.RLock()
	v, err := db.idx.Get(append([]byte{pfxCID}, c.Bytes()...), nil)
	db.idxMu.RUnlock()
	if err != nil {
		return nil, db.readErr(fmt.Sprintf("entry %s", c), err)
	}
	ek, ok := parseCIDValue(v)
	if !ok {
		return nil, fmt.Errorf("entry %s: CID index value: %w", c, ErrCorrupt)
	}
	return db.Get(ek.author, ek.seq)
}

// Range calls fn with author's entries from seq from to seq to, both
// included, in order, reading them from the segments. It stops at the
// first error fn returns and returns it. Entries appended while Range runs
// may or may not be seen.
func (db *DB) Range(author keys.DeviceID, from, to uint64, fn func(*entry.Entry) error) error {
	if from > to {
		return nil
	}
	r := &util.Range{Start: locKey(author, from)}
	if to == math.MaxUint64 {
		r.Limit = util.BytesPrefix(append([]byte{pfxLoc}, author[:]...)).Limit
	} else {
		r.Limit = locKey(author, to+1)
	}
	db.idxMu.RLock()
	defer db.idxMu.RUnlock()
	it := db.idx.NewIterator(r, readThrough) // a replay or a peer's range reads each key once
	defer it.Release()
	for it.Next() {
		e, err := db.read(it.Value())
		if err != nil {
			ek, _ := parseLocKey(it.Key())
			return fmt.Errorf("entry %s seq %d: %w", author.Short(), ek.seq, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return db.readErr("ranging entries", err)
	}
	return nil
}

// read loads the entry a location value points at and checks it.
func (db *DB) read(v []byte) (*entry.Entry, error) {
	l, c, err := parseLocValue(v)
	if err != nil {
		return nil, err
	}
	p, err := db.readers.read(l)
	if err != nil {
		return nil, err
	}
	// The bytes were validated before they were written and the CID check
	// below proves they are those bytes, so the canonical re-encode is
	// skipped (entry.DecodeStored).
	e, err := entry.DecodeStored(p)
	if err != nil {
		return nil, fmt.Errorf("decoding: %v: %w", err, ErrCorrupt)
	}
	if !e.CID().Equals(c) {
		return nil, fmt.Errorf("CID %s, index says %s: %w", e.CID(), c, ErrCorrupt)
	}
	return e, nil
}

// readErr maps goleveldb's errors onto this package's.
func (db *DB) readErr(what string, err error) error {
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case errors.Is(err, leveldb.ErrClosed):
		return fmt.Errorf("%s: %w", what, ErrClosed)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// AppendMember validates rec against the membership held (State.Apply) and
// makes it durable before returning. A record already held is a no-op; a
// different record with a held sequence number is an error wrapping
// ErrFork; a record that does not apply returns State.Apply's error. On an
// IO error nothing is held and a retry may succeed.
func (db *DB) AppendMember(rec member.Record) error {
	return db.members.append(rec)
}

// MemberRecords returns the membership records held, in order. The slice
// is the caller's.
func (db *DB) MemberRecords() []member.Record { return db.members.records() }

// MemberState returns the membership folded from the records held. The
// State is the caller's.
func (db *DB) MemberState() *member.State { return fold(db.cfg.Vault, db.members.records()) }

// IndexGet returns the folder record of path and whether there is one.
func (db *DB) IndexGet(path string) (Record, bool, error) {
	db.idxMu.RLock()
	v, err := db.idx.Get(folderKey(path), nil)
	db.idxMu.RUnlock()
	if errors.Is(err, leveldb.ErrNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, db.readErr(fmt.Sprintf("folder record %q", path), err)
	}
	r, err := parseRecord(v)
	if err != nil {
		return Record{}, false, fmt.Errorf("folder record %q: %v: %w", path, err, ErrCorrupt)
	}
	return r, true, nil
}

// IndexAll calls fn with every folder record in path byte order. It stops
// at the first error fn returns and returns it.
func (db *DB) IndexAll(fn func(path string, r Record) error) error {
	db.idxMu.RLock()
	defer db.idxMu.RUnlock()
	it := db.idx.NewIterator(prefixRange(pfxFolder), readThrough)
	defer it.Release()
	for it.Next() {
		path := string(it.Key()[1:])
		r, err := parseRecord(it.Value())
		if err != nil {
			return fmt.Errorf("folder record %q: %v: %w", path, err, ErrCorrupt)
		}
		if err := fn(path, r); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return db.readErr("reading folder index", err)
	}
	return nil
}

// Acked returns what peer acknowledged holding: author -> highest sequence.
// The map is the caller's.
func (db *DB) Acked(peer keys.DeviceID) (map[keys.DeviceID]uint64, error) {
	db.idxMu.RLock()
	defer db.idxMu.RUnlock()
	it := db.idx.NewIterator(prefixRange(append([]byte{pfxAck}, peer[:]...)...), nil)
	defer it.Release()
	out := map[keys.DeviceID]uint64{}
	for it.Next() {
		k, v := it.Key(), it.Value()
		if len(k) != 65 || len(v) != 8 {
			return nil, fmt.Errorf("acknowledged vector of %s: %w", peer.Short(), ErrCorrupt)
		}
		var a keys.DeviceID
		copy(a[:], k[33:])
		out[a] = binary.BigEndian.Uint64(v)
	}
	if err := it.Error(); err != nil {
		return nil, db.readErr("reading acknowledged vector", err)
	}
	return out, nil
}

// Meta returns the named metadata value and whether it is set. The slice
// is the caller's.
func (db *DB) Meta(name string) ([]byte, bool, error) {
	db.idxMu.RLock()
	v, err := db.idx.Get(metaKey(name), nil)
	db.idxMu.RUnlock()
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, db.readErr(fmt.Sprintf("metadata %q", name), err)
	}
	return v, true, nil
}
