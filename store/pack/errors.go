package pack

import "errors"

var (
	// ErrNotFound reports that the store holds no chunk with the given CID.
	ErrNotFound = errors.New("pack: chunk not found")

	// ErrCorrupt reports that stored bytes failed verification (record
	// checksum or CID). Get never returns data together with this error.
	ErrCorrupt = errors.New("pack: corrupt chunk")

	// ErrCIDMismatch reports that Put was given bytes that do not hash to
	// the CID they were given with.
	ErrCIDMismatch = errors.New("pack: data does not match CID")

	// ErrTooLarge reports a chunk larger than MaxChunkSize.
	ErrTooLarge = errors.New("pack: chunk too large")

	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("pack: store closed")

	// ErrEmptyLiveSet reports that GC was given an empty live set while the
	// store holds chunks. Collecting then would delete everything, which is
	// far more often a bug in the caller (an index that failed to load) than
	// an intent; see GCOptions.AllowEmptyLiveSet.
	ErrEmptyLiveSet = errors.New("pack: empty live set for a non-empty store")
)
