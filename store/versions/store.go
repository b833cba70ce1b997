package versions

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/weftsync/weft/store/pack"
)

// Config configures Open.
type Config struct {
	Dir    string // the store's directory (created)
	Logger *slog.Logger
	Now    func() time.Time // nil means time.Now
	// OnQuarantine is told of chunks the scrub or a read found corrupt
	// (pack.Config.OnQuarantine).
	OnQuarantine func(cs []cid.Cid, by pack.FoundBy)
	// FS is the pack's file access (tests inject faults); nil is the OS.
	FS pack.FS
}

// Kept is one version to keep.
type Kept struct {
	ID     []byte // the caller's key for the version (at most 256 bytes)
	Path   string
	Size   uint64
	Chunks []ChunkRef
}

// ErrContent means a chunk's envelope could not be had: the version's
// content is gone from where it was to be read.
var ErrContent = errors.New("version content not available")

// Store is a local version store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	chunks *pack.Store
	cat    *leveldb.DB
	count  atomic.Int64 // versions in the catalog
	// pmu is held shared by Keep and exclusively by Prune: a Keep puts its
	// chunks before it names its version, and a Prune in between would
	// find them unnamed and free them.
	pmu sync.RWMutex
}

// record is a catalog value.
type record struct {
	_      struct{} `cbor:",toarray"`
	Path   string
	Size   uint64
	KeptAt int64 // unix ms, this device's clock
	Chunks []recordChunk
}

type recordChunk struct {
	_    struct{} `cbor:",toarray"`
	CID  []byte
	Size uint32
}

// maxRecord bounds a catalog value read back (a damaged one is skipped).
const maxRecord = 16 << 20

var decMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{MaxArrayElements: 1 << 20, MaxNestedLevels: 4}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// decodeRecord decodes a catalog value; a damaged one is an error.
func decodeRecord(b []byte) (record, []ChunkRef, error) {
	var r record
	if len(b) > maxRecord {
		return r, nil, fmt.Errorf("catalog record of %d bytes", len(b))
	}
	if err := decMode.Unmarshal(b, &r); err != nil {
		return r, nil, fmt.Errorf("catalog record: %w", err)
	}
	refs := make([]ChunkRef, 0, len(r.Chunks))
	for _, c := range r.Chunks {
		id, err := cid.Cast(c.CID)
		if err != nil {
			return r, nil, fmt.Errorf("catalog record: chunk: %w", err)
		}
		refs = append(refs, ChunkRef{CID: id, Size: c.Size})
	}
	return r, refs, nil
}

// catalogOptions keep the catalog small in memory: a record is a few
// hundred bytes and an idle agent should not hold goleveldb's default 4 MiB
// write buffer and 8 MiB block cache for it.
var catalogOptions = &opt.Options{WriteBuffer: 128 << 10, BlockCacheCapacity: 128 << 10, OpenFilesCacheCapacity: 32}

var syncWrite = &opt.WriteOptions{Sync: true}

// Open opens or creates the store in cfg.Dir.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("versions: Config.Dir is empty")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	chunks, err := pack.Open(pack.Config{Dir: filepath.Join(cfg.Dir, "chunks"), FS: cfg.FS, Logger: cfg.Logger, OnQuarantine: cfg.OnQuarantine, SmallIndex: true})
	if err != nil {
		return nil, fmt.Errorf("opening the version store's chunks: %w", err)
	}
	cat, err := leveldb.OpenFile(filepath.Join(cfg.Dir, "catalog"), catalogOptions)
	if err != nil {
		if !lerrors.IsCorrupted(err) {
			chunks.Close()
			return nil, fmt.Errorf("opening the version catalog: %w", err)
		}
		// A damaged catalog loses the names of some kept versions, never
		// a byte of the folder: recover what goleveldb can.
		cfg.Logger.Warn("version catalog damaged; recovering it", "err", err)
		if cat, err = leveldb.RecoverFile(filepath.Join(cfg.Dir, "catalog"), catalogOptions); err != nil {
			chunks.Close()
			return nil, fmt.Errorf("recovering the version catalog: %w", err)
		}
	}
	s := &Store{cfg: cfg, chunks: chunks, cat: cat}
	it := cat.NewIterator(nil, nil)
	var n int64
	for it.Next() {
		n++
	}
	it.Release()
	s.count.Store(n)
	return s, nil
}

// Close releases the store.
func (s *Store) Close() error {
	return errors.Join(s.cat.Close(), s.chunks.Close())
}

// Has reports whether the catalog names the version.
func (s *Store) Has(id []byte) bool {
	ok, err := s.cat.Has(id, nil)
	return err == nil && ok
}

// Holds reports whether the version is kept and every one of its chunks is
// still in the store (the scrub drops a corrupt one).
func (s *Store) Holds(id []byte) bool {
	b, err := s.cat.Get(id, nil)
	if err != nil {
		return false
	}
	_, refs, err := decodeRecord(b)
	if err != nil {
		return false
	}
	for _, c := range refs {
		if !s.HasChunk(c.CID) {
			return false
		}
	}
	return true
}

// HasChunk reports whether the store holds the chunk.
func (s *Store) HasChunk(c cid.Cid) bool {
	ok, err := s.chunks.Has(c)
	return err == nil && ok
}

// Chunk returns a chunk's envelope, re-verified against its CID.
func (s *Store) Chunk(c cid.Cid) ([]byte, error) {
	return s.chunks.Get(c)
}

// Keep stores the version: each chunk the store lacks is asked of envelope
// and put (durably), then the version is named in the catalog (synced).
// It returns the bytes of chunks it added. A version already named is
// left as it is. An error from envelope is returned wrapped in ErrContent
// and nothing is named (chunks already put are freed by a later Prune).
func (s *Store) Keep(k Kept, envelope func(cid.Cid) ([]byte, error)) (int64, error) {
	if len(k.ID) == 0 || len(k.ID) > 256 {
		return 0, fmt.Errorf("versions: key of %d bytes", len(k.ID))
	}
	s.pmu.RLock()
	defer s.pmu.RUnlock()
	if s.Has(k.ID) {
		return 0, nil
	}
	var added int64
	r := record{Path: k.Path, Size: k.Size, KeptAt: s.cfg.Now().UnixMilli(), Chunks: make([]recordChunk, 0, len(k.Chunks))}
	for _, c := range k.Chunks {
		r.Chunks = append(r.Chunks, recordChunk{CID: c.CID.Bytes(), Size: c.Size})
		if s.HasChunk(c.CID) {
			continue
		}
		env, err := envelope(c.CID)
		if err != nil {
			return added, fmt.Errorf("%w: %s: %v", ErrContent, k.Path, err)
		}
		if err := s.chunks.Put(c.CID, env); err != nil {
			return added, fmt.Errorf("keeping a chunk of %s: %w", k.Path, err)
		}
		added += int64(len(env))
	}
	b, err := cbor.Marshal(r)
	if err != nil {
		return added, err
	}
	if err := s.cat.Put(k.ID, b, syncWrite); err != nil {
		return added, fmt.Errorf("naming a kept version of %s: %w", k.Path, err)
	}
	s.count.Add(1)
	return added, nil
}

// Usage is what the store holds.
type Usage struct {
	Versions    int64 // versions named in the catalog
	Bytes       int64 // bytes of the chunks held, each counted once
	BytesOnDisk int64 // bytes of the pack files (Bytes plus what GC has not yet freed)
}

// Usage reports what the store holds now.
func (s *Store) Usage() Usage {
	st := s.chunks.Stats()
	return Usage{Versions: s.count.Load(), Bytes: st.BytesStored, BytesOnDisk: st.BytesOnDisk}
}

// PruneResult reports what a Prune did.
type PruneResult struct {
	Dropped      int   // versions dropped from the catalog
	Retained     int   // versions still named
	Bytes        int64 // chunk bytes the retained versions take
	FreedOnDisk  int64 // pack bytes freed by the GC
	Unreadable   int   // damaged catalog records dropped
	DroppedPaths []string
}

// Prune drops the versions policy p does not retain at now (current says
// whether the folder holds a version now), then frees the chunks no
// retained version uses.
func (s *Store) Prune(ctx context.Context, p Policy, current func(id []byte) bool) (PruneResult, error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	var res PruneResult
	var es []Entry
	var bad [][]byte
	it := s.cat.NewIterator(nil, nil)
	for it.Next() {
		id := append([]byte(nil), it.Key()...)
		r, refs, err := decodeRecord(it.Value())
		if err != nil {
			bad = append(bad, id)
			continue
		}
		es = append(es, Entry{ID: id, Path: r.Path, KeptAt: time.UnixMilli(r.KeptAt), Current: current(id), Chunks: refs})
	}
	err := it.Error()
	it.Release()
	if err != nil {
		return res, fmt.Errorf("reading the version catalog: %w", err)
	}
	drop, bytes := Plan(es, s.cfg.Now(), p)
	b := new(leveldb.Batch)
	for _, id := range bad {
		b.Delete(id)
	}
	dropped := make([]bool, len(es))
	for _, i := range drop {
		b.Delete(es[i].ID)
		dropped[i] = true
		res.DroppedPaths = append(res.DroppedPaths, es[i].Path)
	}
	if b.Len() > 0 {
		if err := s.cat.Write(b, &opt.WriteOptions{Sync: true}); err != nil {
			return res, fmt.Errorf("dropping versions from the catalog: %w", err)
		}
		s.count.Add(-int64(b.Len()))
	}
	res.Dropped, res.Unreadable, res.Retained, res.Bytes = len(drop), len(bad), len(es)-len(drop), bytes
	live := func(yield func(cid.Cid) bool) {
		for i, e := range es {
			if dropped[i] {
				continue
			}
			for _, c := range e.Chunks {
				if !yield(c.CID) {
					return
				}
			}
		}
	}
	// No grace: no Keep runs meanwhile (pmu), so an unnamed chunk is garbage.
	gc, err := s.chunks.GC(ctx, pack.GCOptions{Live: iter.Seq[cid.Cid](live), Grace: -1, AllowEmptyLiveSet: true})
	if err != nil {
		return res, fmt.Errorf("freeing the chunks of dropped versions: %w", err)
	}
	res.FreedOnDisk = gc.BytesOnDiskBefore - gc.BytesOnDiskAfter
	return res, nil
}

// ScrubStep re-verifies up to maxBytes of the store's chunks (pack.Store.ScrubStep).
func (s *Store) ScrubStep(maxBytes int64) (pack.ScrubStepResult, error) {
	return s.chunks.ScrubStep(maxBytes)
}

// ScrubPass re-verifies every chunk now (pack.Store.ScrubPass).
func (s *Store) ScrubPass(ctx context.Context, stepBytes int64) (pack.ScrubStepResult, error) {
	return s.chunks.ScrubPass(ctx, stepBytes)
}

// PutChunk stores a chunk again (a repair of one the scrub dropped).
func (s *Store) PutChunk(c cid.Cid, env []byte) error {
	return s.chunks.Put(c, env)
}
