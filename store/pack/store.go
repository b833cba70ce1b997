package pack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	_ "github.com/multiformats/go-multihash/register/blake3" // chunk CIDs use BLAKE3-256
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// PackSize is the size at which a pack file is closed and the next one
// started. Tens of MiB keep the number of files small and a GC rewrite
// cheap.
const PackSize = 64 << 20

// MaxChunkSize bounds one chunk.
const MaxChunkSize = chunkstore.MaxChunkSize

// Config configures a Store. The zero value of every field but Dir is valid.
type Config struct {
	// Dir holds the packs (Dir/packs) and the index (Dir/index).
	Dir string
	// FS is the file system for pack files; nil means OSFS.
	FS FS
	// PackSize overrides the package's PackSize; tests use small packs.
	PackSize int64
	// CommitDelay bounds how long the commit loop waits for more concurrent
	// writers to join a batch before fsyncing it. It only waits while
	// fewer requests are queued than Put calls are in progress, so a lone
	// writer never waits. Zero means 1 ms; negative means never wait.
	CommitDelay time.Duration
	// Now is the clock for chunk ages and scrub records; nil means time.Now.
	Now func() time.Time
	// Logger receives recovery and GC reports and a Warn for each chunk
	// quarantined; nil discards them.
	Logger *slog.Logger
	// OnQuarantine, if set, is told of the chunks a scrub step, a Get or
	// a GC run found corrupt and quarantined (quarantine.go), once each,
	// after the index no longer holds them and with no lock of the store
	// held: it may call the store. It runs on the goroutine that found
	// them and holds it up, so it should be quick.
	OnQuarantine func(cs []cid.Cid, by FoundBy)
	// SmallIndex opens the index with small buffers and caches (a
	// device's version store: little data, few reads, and memory an idle
	// agent should not spend).
	SmallIndex bool

	// openIndex opens the goleveldb index; nil means leveldb.OpenFile.
	// goleveldb's own IO is outside FS: tests use this to inject faults
	// into it.
	openIndex func(path string, o *opt.Options) (*leveldb.DB, error)
}

func (c *Config) validate() error {
	if c.Dir == "" {
		return errors.New("pack: Config.Dir is empty")
	}
	if c.FS == nil {
		c.FS = OSFS{}
	}
	if c.PackSize <= 0 {
		c.PackSize = PackSize
	}
	if c.CommitDelay == 0 {
		c.CommitDelay = time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.openIndex == nil {
		c.openIndex = leveldb.OpenFile
	}
	return nil
}

// Stats are counters since Open and current totals; Fsyncs counts fsyncs
// of pack files.
type Stats = chunkstore.Stats

// Store is the chunk store. It is safe for concurrent use. Close it.
type Store struct {
	cfg      Config
	fs       FS
	packDir  string
	db       *leveldb.DB
	reqs     chan *putReq
	quit     chan struct{}
	loopDone chan struct{}
	closed   atomic.Bool
	inflight atomic.Int64 // Put calls between enqueue and answer

	puts, appends, fsyncs, indexSyncs, batches, corrupt atomic.Uint64
	scrubChunks, scrubBytes, quarantined                atomic.Uint64

	chunks, bytesStored atomic.Int64 // see Stats

	// wmu guards the fields below. The commit loop holds it for stage 1 of
	// a batch (commit.go); GC and the scrub hold it, through lockIdle, to
	// drop index entries, so that a chunk cannot be dropped between a Put
	// finding it present and that Put returning.
	wmu       sync.Mutex
	cur       File          // the pack being appended to; nil after a failed rotation
	curID     uint32        // its ID
	curSize   int64         // bytes of cur written by batches whose writes succeeded
	curDirty  bool          // cur may hold bytes past curSize (a failed append)
	bw        *bufio.Writer // reused by each append
	nextID    uint32
	packSizes map[uint32]int64 // written length of each pack

	// pmu guards syncing and failed, shared by the loop and the syncer.
	pmu     sync.Mutex
	idle    *sync.Cond   // on pmu: signalled when syncing drops
	syncing int          // batches between stage 1 and their answer
	failed  []failedPack // packs whose fsync failed, for the loop to cut back

	// imu guards the db field: every use of the index outside the commit
	// loop, the syncer and Open holds it shared. heal (the loop, between
	// batches) takes it exclusively to close and reopen the index after a
	// failed write, and only ever with TryLock: a goroutine that holds it
	// shared may wait for the loop (GC's relocations) or take it shared
	// again, and neither can deadlock against a writer that never waits.
	imu sync.RWMutex
	// broken is set when an index write failed: goleveldb then refuses
	// every later write until it is reopened, which the loop does before
	// its next batch (heal).
	broken atomic.Bool
	// recovery is what the last recovery (Open or heal) repaired.
	recovery recoveryReport

	// Lock order: gcMu, then rmu, then wmu, then pmu. imu is taken shared
	// at any point of that order, since the only exclusive holder (heal,
	// which holds wmu) never waits for it and waits for nothing while it
	// holds it.
	//
	// rmu is held shared by readers and exclusively while a pack file is
	// deleted, so that no read finds its pack gone under it.
	rmu sync.RWMutex
	// gcMu serialises GC runs and scrub steps.
	gcMu sync.Mutex
	// hmu guards readers.
	hmu     sync.Mutex
	readers map[uint32]File
}

// Open opens or creates the store in cfg.Dir and recovers it (see
// recover.go). It returns once the store is consistent.
func Open(cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{
		cfg:       cfg,
		fs:        cfg.FS,
		packDir:   filepath.Join(cfg.Dir, "packs"),
		reqs:      make(chan *putReq, 1024),
		quit:      make(chan struct{}),
		loopDone:  make(chan struct{}),
		packSizes: make(map[uint32]int64),
		readers:   make(map[uint32]File),
	}
	s.idle = sync.NewCond(&s.pmu)
	if err := s.fs.MkdirAll(s.packDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating pack directory: %w", err)
	}
	if err := s.recover(); err != nil {
		if s.db != nil {
			s.db.Close()
		}
		s.closeFiles()
		return nil, err
	}
	go s.loop()
	return s, nil
}

// Close waits for the commit in progress (and for a GC run or scrub step
// in progress to stop), marks the store cleanly closed and releases it.
// Put calls still waiting get ErrClosed. Calls after Close return
// ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.quit)
	<-s.loopDone
	// A GC or scrub in progress fails fast once the loop is gone (its
	// relocations get ErrClosed); wait for it before closing the index.
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	s.lockIdle()
	defer s.wmu.Unlock()
	err := s.db.Put(keyClean, nil, syncWrite)
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	s.closeFiles()
	if err != nil {
		return fmt.Errorf("closing chunk index: %w", err)
	}
	return nil
}

func (s *Store) closeFiles() {
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
	s.hmu.Lock()
	for id, f := range s.readers {
		f.Close()
		delete(s.readers, id)
	}
	s.hmu.Unlock()
}

func (s *Store) packPath(id uint32) string {
	return filepath.Join(s.packDir, fmt.Sprintf("%08x.pack", id))
}

// reader returns a read handle on pack id, opening it on first use.
func (s *Store) reader(id uint32) (File, error) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if f, ok := s.readers[id]; ok {
		return f, nil
	}
	f, err := s.fs.OpenFile(s.packPath(id), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	s.readers[id] = f
	return f, nil
}

func (s *Store) dropReader(id uint32) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if f, ok := s.readers[id]; ok {
		f.Close()
		delete(s.readers, id)
	}
}

// Has reports whether the store holds c.
func (s *Store) Has(c cid.Cid) (bool, error) {
	if s.closed.Load() {
		return false, ErrClosed
	}
	s.imu.RLock()
	ok, err := s.db.Has(chunkKey(c.Bytes()), nil)
	s.imu.RUnlock()
	if err != nil {
		return false, fmt.Errorf("looking up chunk %s: %w", c, err)
	}
	return ok, nil
}

// Get returns the chunk named c, verified against c. The outcomes are: the
// bytes (a fresh slice the caller owns); ErrNotFound; ErrCorrupt (wrapped,
// with no bytes) when the record fails its checksum or the bytes do not
// hash to c, in which case the chunk is quarantined (quarantine.go: later
// calls say ErrNotFound until it is put again); or a wrapped IO error.
func (s *Store) Get(c cid.Cid) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	data, l, err := s.get(c)
	if isCorrupt(err) && l.length > 0 {
		if qerr := s.quarantineRead(c, l); qerr != nil {
			return nil, fmt.Errorf("%w (quarantining it: %v)", err, qerr)
		}
	}
	return data, err
}

// get reads and verifies chunk c; on corruption it also returns the
// location found bad (zero if the index entry itself is bad).
func (s *Store) get(c cid.Cid) ([]byte, loc, error) {
	s.rmu.RLock()
	defer s.rmu.RUnlock()
	cb := c.Bytes()
	l, err := s.lookup(cb)
	if err != nil {
		return nil, loc{}, fmt.Errorf("chunk %s: %w", c, err)
	}
	data, err := s.readAt(l, cb)
	if err != nil {
		return nil, l, fmt.Errorf("chunk %s: %w", c, err)
	}
	if !chunkstore.Verify(c, data) {
		return nil, l, fmt.Errorf("chunk %s: hash mismatch: %w", c, ErrCorrupt)
	}
	return data, l, nil
}

// lookup reads the index entry for a chunk.
func (s *Store) lookup(cidBytes []byte) (loc, error) {
	s.imu.RLock()
	v, err := s.db.Get(chunkKey(cidBytes), nil)
	s.imu.RUnlock()
	if errors.Is(err, leveldb.ErrNotFound) {
		return loc{}, ErrNotFound
	}
	if err != nil {
		return loc{}, fmt.Errorf("reading index: %w", err)
	}
	l, err := decodeLoc(v)
	if err != nil {
		return loc{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	return l, nil
}

// readAt reads the record at l and checks its framing and that it holds
// the chunk cidBytes. It does not hash the chunk. The caller holds rmu.
func (s *Store) readAt(l loc, cidBytes []byte) ([]byte, error) {
	f, err := s.reader(l.pack)
	if err != nil {
		return nil, fmt.Errorf("opening pack %d: %w", l.pack, err)
	}
	rec := make([]byte, l.length)
	if _, err := f.ReadAt(rec, l.off); err != nil {
		if errors.Is(err, io.EOF) {
			// The index points past the end of the pack.
			return nil, fmt.Errorf("pack %d at %d: record past the end: %w", l.pack, l.off, ErrCorrupt)
		}
		return nil, fmt.Errorf("reading pack %d at %d: %w", l.pack, l.off, err)
	}
	got, data, err := chunkrec.Parse(rec)
	if err != nil {
		return nil, fmt.Errorf("pack %d at %d: %w", l.pack, l.off, ErrCorrupt)
	}
	if string(got) != string(cidBytes) {
		return nil, fmt.Errorf("pack %d at %d holds another chunk: %w", l.pack, l.off, ErrCorrupt)
	}
	return data, nil
}

// isCorrupt reports whether err says stored bytes are bad (as opposed to
// an IO failure that may pass).
func isCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Puts:       s.puts.Load(),
		Appends:    s.appends.Load(),
		Fsyncs:     s.fsyncs.Load(),
		IndexSyncs: s.indexSyncs.Load(),
		Batches:    s.batches.Load(),
		Corrupt:    s.corrupt.Load(),

		Quarantined: s.quarantined.Load(),
		ScrubChunks: s.scrubChunks.Load(),
		ScrubBytes:  s.scrubBytes.Load(),
	}
	st.Chunks = s.chunks.Load()
	st.BytesStored = s.bytesStored.Load()
	s.wmu.Lock()
	for _, n := range s.packSizes {
		st.BytesOnDisk += n
	}
	s.wmu.Unlock()
	return st
}

// Destroy closes the store and removes its directory (packs and index).
func (s *Store) Destroy() error {
	if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	if err := os.RemoveAll(s.cfg.Dir); err != nil {
		return fmt.Errorf("removing chunk store %s: %w", s.cfg.Dir, err)
	}
	return nil
}

// A Store is a chunkstore.Store.
var _ chunkstore.Store = (*Store)(nil)
