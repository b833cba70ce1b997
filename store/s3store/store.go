package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/minio/minio-go/v7"
	_ "github.com/multiformats/go-multihash/register/blake3" // chunk CIDs use BLAKE3-256
	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// Defaults of Config.
const (
	// DefaultObjectSize is the size at which an object stops taking more
	// chunks: large enough that small notes cost few requests, small
	// enough that a GC rewrite or a scrub step reads little.
	DefaultObjectSize = 8 << 20
	// DefaultUploads is how many objects upload at once.
	DefaultUploads = 4
	// DefaultRetireGrace is how long an object GC has rewritten stays
	// before it is deleted, so that a read that looked a chunk up in it
	// just before finishes.
	DefaultRetireGrace = 10 * time.Minute
	// DefaultCommitDelay is how long a batch waits for one more Put.
	DefaultCommitDelay = 10 * time.Millisecond
	// DefaultTimeout bounds one request.
	DefaultTimeout = 2 * time.Minute
)

// Config configures a Store.
type Config struct {
	// Client talks to the object storage (Connect makes one).
	Client *minio.Client
	// Bucket holds the objects; it must exist (EnsureBucket).
	Bucket string
	// Prefix is put before every object name: one per vault, ending in "/".
	Prefix string
	// IndexDir holds the local goleveldb index.
	IndexDir string
	// ObjectSize is the target object size; zero means DefaultObjectSize.
	ObjectSize int64
	// Uploads bounds the objects uploading at once; zero means
	// DefaultUploads.
	Uploads int
	// CommitDelay is how long a batch waits for one more Put to join it
	// (at most 10 times that in all; see gather). Zero means
	// DefaultCommitDelay; negative means never wait.
	CommitDelay time.Duration
	// RetireGrace is how long a rewritten object stays before it is
	// deleted; zero means DefaultRetireGrace, negative deletes at once.
	RetireGrace time.Duration
	// Timeout bounds one request; zero means DefaultTimeout.
	Timeout time.Duration
	// Now is the clock for chunk ages and scrub records; nil means time.Now.
	Now func() time.Time
	// Logger receives recovery and GC reports; nil discards them.
	Logger *slog.Logger
	// OnQuarantine, if set, is told of the chunks a scrub step, a Get or a
	// GC run found corrupt or gone (after the index dropped them, with no
	// lock held). It is not called during Open: what Open finds gone is
	// simply not in the index when Open returns.
	OnQuarantine func(cs []cid.Cid, by chunkstore.FoundBy)
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("s3store: Config.Client is nil")
	case c.Bucket == "":
		return errors.New("s3store: Config.Bucket is empty")
	case c.IndexDir == "":
		return errors.New("s3store: Config.IndexDir is empty")
	case c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/"):
		return fmt.Errorf("s3store: Config.Prefix %q does not end in /", c.Prefix)
	}
	if c.ObjectSize <= 0 {
		c.ObjectSize = DefaultObjectSize
	}
	if c.Uploads <= 0 {
		c.Uploads = DefaultUploads
	}
	if c.CommitDelay == 0 {
		c.CommitDelay = DefaultCommitDelay
	}
	if c.RetireGrace == 0 {
		c.RetireGrace = DefaultRetireGrace
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Store is a chunk store in object storage. It is safe for concurrent use.
// Close it.
type Store struct {
	cfg    Config
	db     *leveldb.DB
	win    *windows // reads in order (window.go)
	reqs   chan *putReq
	quit   chan struct{}
	closed atomic.Bool

	loopDone chan struct{}
	uploads  sync.WaitGroup // uploads started by the loop
	slots    chan struct{}  // one per upload in flight

	// dropMu serialises every read-then-write of chunk entries: a Put
	// answered from the index (renew), an upload's index batch, GC's
	// drops and quarantine. So a chunk is not dropped between a Put
	// finding it and that Put returning, a renewal cannot write back a
	// place a GC relocation just moved the chunk from, and two uploads
	// of one chunk count it once.
	dropMu sync.Mutex
	// gcMu serialises GC runs and scrub steps.
	gcMu sync.Mutex

	nextSeq atomic.Uint64

	puts, appends, objectsPut, batches, corrupt, quarantined atomic.Uint64
	scrubChunks, scrubBytes                                  atomic.Uint64
	chunks, bytesStored, bytesOnDisk                         atomic.Int64
	req                                                      requestCounts
}

// requestCounts counts requests by kind.
type requestCounts struct {
	put, get, list, del atomic.Uint64
}

// putReq is one chunk on its way into an object: a Put, or a GC
// relocation (from > 0: the chunk's record in object from moves, keeping
// its age, unless the index no longer points there).
type putReq struct {
	c      cid.Cid
	data   []byte
	from   uint64
	stored int64
	done   chan error
}

// A Store is a chunkstore.Store.
var _ chunkstore.Store = (*Store)(nil)

// Open opens the store, reconciling its index with the objects under the
// prefix (see the package comment).
func Open(cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{
		cfg:      cfg,
		reqs:     make(chan *putReq),
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
		slots:    make(chan struct{}, cfg.Uploads),
		win:      newWindows(),
	}
	db, err := openIndex(cfg.IndexDir, cfg.Logger)
	if err != nil {
		return nil, err
	}
	s.db = db
	if err := s.reconcile(); err != nil {
		db.Close()
		return nil, err
	}
	go s.loop()
	return s, nil
}

// openIndex opens the goleveldb index, and starts an empty one (to be
// rebuilt from the objects) when it is missing or corrupt beyond
// goleveldb's recovery.
func openIndex(dir string, log *slog.Logger) (*leveldb.DB, error) {
	o := &opt.Options{BlockCacheCapacity: 1 << 20, WriteBuffer: 1 << 20}
	db, err := leveldb.OpenFile(dir, o)
	if err == nil {
		return db, nil
	}
	if !lerrors.IsCorrupted(err) {
		// Locked by another process, no permission, no file handles:
		// not a reason to throw the index away and read every object.
		return nil, fmt.Errorf("opening chunk index %s: %w", dir, err)
	}
	log.Warn("chunk index corrupt; recovering it", "dir", dir, "err", err)
	if db, rerr := leveldb.RecoverFile(dir, o); rerr == nil {
		return db, nil
	}
	if rerr := os.RemoveAll(dir); rerr != nil {
		return nil, fmt.Errorf("opening chunk index %s: %w (and removing it: %v)", dir, err, rerr)
	}
	db, err = leveldb.OpenFile(dir, o)
	if err != nil {
		return nil, fmt.Errorf("opening chunk index %s: %w", dir, err)
	}
	log.Warn("chunk index started afresh; rebuilding it from the objects", "dir", dir)
	return db, nil
}

// Close waits for the uploads in flight and a GC run or scrub step in
// progress, and releases the store. Put calls still waiting get
// ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.quit)
	<-s.loopDone
	s.uploads.Wait()
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing chunk index: %w", err)
	}
	return nil
}

// Destroy closes the store, deletes every object under its prefix (listed
// afresh, so objects the index never knew go too) and removes the index.
func (s *Store) Destroy() error {
	if err := s.Close(); err != nil && !errors.Is(err, chunkstore.ErrClosed) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*s.cfg.Timeout)
	defer cancel()
	objs := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objs)
		s.req.list.Add(1)
		for oi := range s.cfg.Client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.key(""), Recursive: true}) {
			if oi.Err != nil {
				listErr = oi.Err
				return
			}
			select {
			case objs <- oi:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for re := range s.cfg.Client.RemoveObjects(ctx, s.cfg.Bucket, objs, minio.RemoveObjectsOptions{}) {
		if re.Err != nil && !isNoSuchKey(re.Err) {
			errs = append(errs, fmt.Errorf("deleting object %s: %w", re.ObjectName, re.Err))
		}
	}
	s.req.del.Add(1) // batched deletes: at least one request
	if listErr != nil {
		errs = append(errs, fmt.Errorf("listing objects under %s: %w", s.key(""), listErr))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(s.cfg.IndexDir); err != nil {
		return fmt.Errorf("removing chunk index %s: %w", s.cfg.IndexDir, err)
	}
	return nil
}

// ctx returns a context bounded by the request timeout.
func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.cfg.Timeout)
}

// key is the full object key of name.
func (s *Store) key(name string) string { return s.cfg.Prefix + "p/" + name }

// newName names object seq: its sequence number and random digits, so
// that two writers that somehow took the same number (an index restored
// from an old copy while objects were listed late) never overwrite each
// other's object.
func newName(seq uint64) string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%016x-%s", seq, hex.EncodeToString(r[:]))
}

// seqOf parses the sequence number of an object name.
func seqOf(name string) (uint64, bool) {
	if len(name) < 17 || name[16] != '-' {
		return 0, false
	}
	seq, err := strconv.ParseUint(name[:16], 16, 64)
	return seq, err == nil && seq > 0
}

// Has reports whether the store holds c.
func (s *Store) Has(c cid.Cid) (bool, error) {
	if s.closed.Load() {
		return false, chunkstore.ErrClosed
	}
	ok, err := s.db.Has(chunkKey(c.Bytes()), nil)
	if err != nil {
		return false, fmt.Errorf("looking up chunk %s: %w", c, err)
	}
	return ok, nil
}

func (s *Store) lookup(cb []byte) (loc, []byte, error) {
	v, err := s.db.Get(chunkKey(cb), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return loc{}, nil, chunkstore.ErrNotFound
	}
	if err != nil {
		return loc{}, nil, err
	}
	l, err := decodeLoc(v)
	return l, v, err
}

// Put stores data under c; see chunkstore.Store.
func (s *Store) Put(c cid.Cid, data []byte) error {
	if s.closed.Load() {
		return chunkstore.ErrClosed
	}
	if len(data) > chunkstore.MaxChunkSize {
		return fmt.Errorf("chunk %s of %d bytes: %w", c, len(data), chunkstore.ErrTooLarge)
	}
	if len(c.Bytes()) > chunkrec.MaxCIDLen {
		return fmt.Errorf("CID of %d bytes: %w", len(c.Bytes()), chunkstore.ErrCIDMismatch)
	}
	if !chunkstore.Verify(c, data) {
		return fmt.Errorf("chunk %s: %w", c, chunkstore.ErrCIDMismatch)
	}
	if done, err := s.renew(c); done || err != nil {
		if err == nil {
			s.puts.Add(1)
		}
		return err
	}
	r := &putReq{c: c, data: data, done: make(chan error, 1)}
	if err := s.submit(r); err != nil {
		return err
	}
	s.puts.Add(1)
	return nil
}

// renew answers a Put of a chunk the store holds: its age starts again.
func (s *Store) renew(c cid.Cid) (bool, error) {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	l, _, err := s.lookup(c.Bytes())
	if errors.Is(err, chunkstore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up chunk %s: %w", c, err)
	}
	l.stored = s.cfg.Now().Unix()
	if err := s.db.Put(chunkKey(c.Bytes()), l.encode(), nil); err != nil {
		return false, fmt.Errorf("renewing chunk %s: %w", c, err)
	}
	return true, nil
}

// submit hands r to the commit loop and waits for its answer.
func (s *Store) submit(r *putReq) error {
	select {
	case s.reqs <- r:
	case <-s.quit:
		return chunkstore.ErrClosed
	}
	return <-r.done
}

// Get returns the chunk named c, verified against c; see chunkstore.Store.
func (s *Store) Get(c cid.Cid) ([]byte, error) {
	if s.closed.Load() {
		return nil, chunkstore.ErrClosed
	}
	cb := c.Bytes()
	for range 3 { // a GC may move the chunk while it is read
		l, raw, err := s.lookup(cb)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", c, err)
		}
		o, err := s.objectOf(l.seq)
		if err != nil {
			if _, now, lerr := s.lookup(cb); lerr == nil && !bytes.Equal(now, raw) {
				continue // moved meanwhile, and its old object deleted
			}
			return nil, fmt.Errorf("chunk %s: %w", c, err)
		}
		rec, err := s.readRecord(o, l.off, l.length)
		if isNoSuchKey(err) {
			if _, now, lerr := s.lookup(cb); lerr == nil && !bytes.Equal(now, raw) {
				continue // moved meanwhile
			}
			s.quarantine([][2][]byte{{chunkKey(cb), raw}}, chunkstore.FoundByRead)
			return nil, fmt.Errorf("chunk %s: its object %s is gone: %w", c, o.name, chunkstore.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("reading chunk %s: %w", c, err)
		}
		if data, ok := checkRecord(rec, c); ok {
			return data, nil
		}
		s.quarantine([][2][]byte{{chunkKey(cb), raw}}, chunkstore.FoundByRead)
		return nil, fmt.Errorf("chunk %s in object %s at %d: %w", c, o.name, l.off, chunkstore.ErrCorrupt)
	}
	return nil, fmt.Errorf("chunk %s: moved three times while being read: %w", c, chunkstore.ErrNotFound)
}

// checkRecord parses rec and checks that it holds c and that the chunk
// hashes to c.
func checkRecord(rec []byte, c cid.Cid) ([]byte, bool) {
	cb, data, err := chunkrec.Parse(rec)
	if err != nil || !bytes.Equal(cb, c.Bytes()) || !chunkstore.Verify(c, data) {
		return nil, false
	}
	return data, true
}

// objectOf returns what the index knows of object seq.
func (s *Store) objectOf(seq uint64) (object, error) {
	v, err := s.db.Get(seqKey(prefixObject, seq), nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return object{}, fmt.Errorf("index names object %d, which it does not list: %w", seq, chunkstore.ErrNotFound)
	}
	if err != nil {
		return object{}, err
	}
	return decodeObject(seq, v)
}

// readRange reads length bytes of object name from off.
func (s *Store) readRange(name string, off, length int64) ([]byte, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var o minio.GetObjectOptions
	if err := o.SetRange(off, off+length-1); err != nil {
		return nil, err
	}
	s.req.get.Add(1)
	obj, err := s.cfg.Client.GetObject(ctx, s.cfg.Bucket, s.key(name), o)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	b := make([]byte, length)
	n, err := io.ReadFull(obj, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return b[:n], nil // a short object: the record check fails
	}
	return b, err
}

// readObject reads a whole object.
func (s *Store) readObject(name string) ([]byte, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	s.req.get.Add(1)
	obj, err := s.cfg.Client.GetObject(ctx, s.cfg.Bucket, s.key(name), minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

func isNoSuchKey(err error) bool {
	return err != nil && minio.ToErrorResponse(err).Code == minio.NoSuchKey
}

// quarantine drops the index entries kvs (key, value as read) that still
// hold the value they were read with, and reports the chunks dropped to
// Config.OnQuarantine.
func (s *Store) quarantine(kvs [][2][]byte, by chunkstore.FoundBy) []cid.Cid {
	out := s.drop(kvs, by)
	if len(out) > 0 && s.cfg.OnQuarantine != nil {
		s.cfg.OnQuarantine(out, by)
	}
	return out
}

// drop is quarantine without the report: GC and the scrub report what
// they found once, when they return. What Open drops (by FoundByOpen) is
// neither reported nor counted as quarantined: a relay compares that count
// with what it was told.
func (s *Store) drop(kvs [][2][]byte, by chunkstore.FoundBy) []cid.Cid {
	var out []cid.Cid
	s.dropMu.Lock()
	b := new(leveldb.Batch)
	for _, kv := range kvs {
		cur, err := s.db.Get(kv[0], nil)
		if err != nil || !bytes.Equal(cur, kv[1]) {
			continue
		}
		l, err := decodeLoc(cur)
		if err != nil {
			continue
		}
		c, err := cid.Cast(kv[0][1:])
		if err != nil {
			continue
		}
		b.Delete(kv[0])
		b.Delete(recordKey(l.seq, l.off))
		out = append(out, c)
		s.chunks.Add(-1)
		s.bytesStored.Add(-dataLen(l.length, len(kv[0])-1))
	}
	err := s.db.Write(b, nil)
	s.dropMu.Unlock()
	if err != nil {
		s.cfg.Logger.Warn("dropping corrupt chunks from the index", "err", err)
		return nil
	}
	for _, c := range out {
		s.cfg.Logger.Warn("chunk quarantined", "cid", c, "found_by", string(by))
	}
	if by != chunkstore.FoundByOpen {
		s.corrupt.Add(uint64(len(out)))
		s.quarantined.Add(uint64(len(out)))
	}
	return out
}

// dataLen is the chunk length of a record of length bytes with a CID of
// cidLen bytes.
func dataLen(length int64, cidLen int) int64 {
	return length - chunkrec.HeaderSize - int64(cidLen)
}

// Stats returns counters since Open and current totals.
func (s *Store) Stats() chunkstore.Stats {
	return chunkstore.Stats{
		Puts:        s.puts.Load(),
		Appends:     s.appends.Load(),
		Fsyncs:      s.objectsPut.Load(),
		Batches:     s.batches.Load(),
		Corrupt:     s.corrupt.Load(),
		Quarantined: s.quarantined.Load(),
		ScrubChunks: s.scrubChunks.Load(),
		ScrubBytes:  s.scrubBytes.Load(),
		Chunks:      s.chunks.Load(),
		BytesStored: s.bytesStored.Load(),
		BytesOnDisk: s.bytesOnDisk.Load(),
		Requests: chunkstore.Requests{
			Put: s.req.put.Load(), Get: s.req.get.Load(), List: s.req.list.Load(),
			Delete: s.req.del.Load(),
		},
	}
}

// LastScrub returns when the last full scrub pass ended, and false if none
// has.
func (s *Store) LastScrub() (time.Time, bool, error) {
	if s.closed.Load() {
		return time.Time{}, false, chunkstore.ErrClosed
	}
	v, err := s.db.Get(keyScrubLast, nil)
	if errors.Is(err, leveldb.ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil || len(v) != 8 {
		return time.Time{}, false, fmt.Errorf("reading last scrub time: %w", errors.Join(err, chunkstore.ErrCorrupt))
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), true, nil
}

var syncWrite = &opt.WriteOptions{Sync: true}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

// prefixRange is the index range of keys starting with p.
func prefixRange(p ...byte) *util.Range { return util.BytesPrefix(p) }
