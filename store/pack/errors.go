package pack

import "github.com/weftsync/weft/store/chunkstore"

// The store's errors are chunkstore's, so that a caller tests for them
// the same way whichever store it holds.
var (
	ErrNotFound     = chunkstore.ErrNotFound
	ErrCorrupt      = chunkstore.ErrCorrupt
	ErrCIDMismatch  = chunkstore.ErrCIDMismatch
	ErrTooLarge     = chunkstore.ErrTooLarge
	ErrClosed       = chunkstore.ErrClosed
	ErrEmptyLiveSet = chunkstore.ErrEmptyLiveSet
)
