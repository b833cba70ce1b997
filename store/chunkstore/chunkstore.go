package chunkstore

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/ipfs/go-cid"
)

// Store is a vault's chunk store. Implementations are safe for concurrent
// use.
type Store interface {
	// Put stores data under c once it has checked that data hashes to c
	// (ErrCIDMismatch otherwise). It returns once the chunk is durable.
	// Putting a chunk the store holds renews its age (GCOptions.Grace).
	Put(c cid.Cid, data []byte) error
	// Get returns the chunk stored under c, ErrNotFound, or ErrCorrupt
	// (no bytes) when what it read does not hash to c.
	Get(c cid.Cid) ([]byte, error)
	// Has reports whether c is stored.
	Has(c cid.Cid) (bool, error)
	// GC drops every chunk that is neither live nor younger than the grace
	// period and reclaims the space they held.
	GC(ctx context.Context, o GCOptions) (GCResult, error)
	// ScrubStep re-verifies stored chunks from where the previous step
	// stopped (a cursor kept across restarts) until it has read about
	// maxBytes or ended a pass, and quarantines those that fail.
	ScrubStep(maxBytes int64) (ScrubStepResult, error)
	// ScrubPass verifies every chunk now, in steps of stepBytes (zero: a
	// default), from the start.
	ScrubPass(ctx context.Context, stepBytes int64) (ScrubStepResult, error)
	// LastScrub returns when the last full scrub pass ended, and false if
	// none has.
	LastScrub() (time.Time, bool, error)
	// Stats returns counters since Open and current totals.
	Stats() Stats
	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
	// Destroy closes the store and deletes everything it holds: every
	// chunk, its data units (pack files, objects) and its index. An
	// operator dropping one vault's replica asks for it.
	Destroy() error
}

// MaxChunkSize bounds one chunk. It is far above the chunker's maximum and
// only guards record parsing and memory against absurd lengths.
const MaxChunkSize = 32 << 20

// DefaultGCGrace is how long a chunk nobody references is kept. A writer
// uploads a version's chunks before the entry that references them, so a
// fresh chunk that is not live yet is normal; only one that stays
// unreferenced this long is garbage.
const DefaultGCGrace = 24 * time.Hour

// DefaultRewriteThreshold is the dead fraction above which GC rewrites a
// pack or an object. At 0.25 the bytes stored stay below 4/3 of the live
// bytes in old packs, and a rewrite copies at most three live bytes per
// dead byte freed.
const DefaultRewriteThreshold = 0.25

// DefaultScrubStep is how much one scrub step reads: small enough that a
// step holds GC and other steps up for a fraction of a second, large
// enough that the per-step index write is noise.
const DefaultScrubStep = 16 << 20

// GCOptions configures one GC run.
type GCOptions struct {
	// Live yields the CID of every chunk still referenced by a retained
	// version. It may yield CIDs the store does not hold and duplicates.
	Live iter.Seq[cid.Cid]
	// Grace keeps chunks stored less than Grace ago whether live or not.
	// Zero means DefaultGCGrace; negative means no grace.
	Grace time.Duration
	// RewriteThreshold is the dead fraction of a pack or object above
	// which it is rewritten. Zero means DefaultRewriteThreshold.
	RewriteThreshold float64
	// AllowEmptyLiveSet lets GC run with an empty live set on a store
	// that holds chunks, deleting them all. Without it GC refuses with
	// ErrEmptyLiveSet (the lesson of restic#4619: an empty live set is
	// far more often a caller's bug than a wish to delete everything).
	AllowEmptyLiveSet bool
	// Before, if set, is called once GC holds its lock (no scrub step or
	// other GC runs until it returns) and before anything is dropped; an
	// error from it aborts the run with that error and nothing dropped.
	// A relay uses it to check that its plan still holds (no chunk was
	// quarantined since it made it).
	Before func() error
}

// GCResult reports what a GC run did.
type GCResult struct {
	Dropped           int   // chunks dropped from the index
	DroppedBytes      int64 // their bytes
	Corrupt           int   // chunks found corrupt while rewriting (quarantined)
	PacksRewritten    int   // packs or objects whose live records were copied and which were then deleted
	BytesOnDiskBefore int64
	BytesOnDiskAfter  int64
}

// ScrubStepResult reports one step of the scrub (or a whole pass).
type ScrubStepResult struct {
	Checked  int       // chunks read and verified
	Bytes    int64     // their record bytes
	Corrupt  []cid.Cid // chunks found corrupt and dropped from the index
	PassDone bool      // the step reached the end of the index
}

// Stats are counters since Open and current totals. Fields a backend has
// no use for stay zero.
type Stats struct {
	Puts        uint64 // Put calls answered without error
	Appends     uint64 // records written (Put and GC rewrites)
	Fsyncs      uint64 // pack: fsyncs of pack files; s3: objects written
	IndexSyncs  uint64 // synced index batches
	Batches     uint64 // group commits
	Corrupt     uint64 // chunks found corrupt and quarantined (scrub, Get and GC)
	Quarantined uint64 // chunks handed to the store's quarantine callback (or that would have been)
	ScrubChunks uint64 // chunks read and verified by scrub steps
	ScrubBytes  uint64 // their record bytes
	Chunks      int64  // chunks in the index
	BytesStored int64  // sum of the lengths of the chunks in the index
	BytesOnDisk int64  // pack: sum of the pack files' sizes; s3: of the objects'

	// Requests counts the requests sent to object storage, by kind
	// (s3 only): what an operator pays for.
	Requests Requests
}

// Requests counts object storage requests.
type Requests struct {
	Put, Get, List, Delete uint64
}

// FoundBy says which reader found a chunk corrupt.
type FoundBy string

// The readers that quarantine.
const (
	FoundByScrub FoundBy = "scrub" // ScrubStep (the background scrub, ScrubPass)
	FoundByRead  FoundBy = "read"  // Get
	FoundByGC    FoundBy = "gc"    // GC, reading live records to rewrite a pack or object
	FoundByOpen  FoundBy = "open"  // Open, finding data the index points at gone
)

var (
	// ErrNotFound reports that the store holds no chunk with the given CID.
	ErrNotFound = errors.New("chunk not found")

	// ErrCorrupt reports that stored bytes failed verification (record
	// checksum or CID). Get never returns data together with this error.
	ErrCorrupt = errors.New("corrupt chunk")

	// ErrCIDMismatch reports that Put was given bytes that do not hash to
	// the CID they were given with.
	ErrCIDMismatch = errors.New("chunk data does not match its CID")

	// ErrTooLarge reports a chunk larger than MaxChunkSize.
	ErrTooLarge = errors.New("chunk too large")

	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("chunk store closed")

	// ErrEmptyLiveSet reports that GC was given an empty live set while the
	// store holds chunks. Collecting then would delete everything, which is
	// far more often a bug in the caller (an index that failed to load) than
	// an intent; see GCOptions.AllowEmptyLiveSet.
	ErrEmptyLiveSet = errors.New("empty live set for a non-empty chunk store")
)

// Verify reports whether data hashes to c.
func Verify(c cid.Cid, data []byte) bool {
	got, err := c.Prefix().Sum(data)
	return err == nil && got.Equals(c)
}

// ScrubSteps runs step (a store's ScrubStep) with stepBytes (zero:
// DefaultScrubStep) until a pass ends, and returns the steps' totals
// (PassDone set once it did). It stops early, with what it did so far,
// when ctx ends or a step fails: the loop of every store's ScrubPass.
func ScrubSteps(ctx context.Context, stepBytes int64, step func(maxBytes int64) (ScrubStepResult, error)) (ScrubStepResult, error) {
	var total ScrubStepResult
	if stepBytes <= 0 {
		stepBytes = DefaultScrubStep
	}
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res, err := step(stepBytes)
		total.Checked += res.Checked
		total.Bytes += res.Bytes
		total.Corrupt = append(total.Corrupt, res.Corrupt...)
		if err != nil {
			return total, err
		}
		if res.PassDone {
			total.PassDone = true
			return total, nil
		}
	}
}
