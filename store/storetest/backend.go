package storetest

import (
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/store/chunkstore"
)

// Options are what the suite asks of a store it opens.
type Options struct {
	// OnQuarantine is told of quarantined chunks; nil discards.
	OnQuarantine func(cs []cid.Cid, by chunkstore.FoundBy)
	// Now is the store's clock; nil means time.Now.
	Now func() time.Time
}

// Backend is one store under test. Every function refers to the same
// storage, created for the test that called NewBackend; the suite calls
// the unit functions only while no store is open.
type Backend struct {
	// Open opens the store over the storage (creating it the first time).
	Open func(t testing.TB, o Options) chunkstore.Store
	// IndexDir is the local directory holding the store's index. The
	// suite copies it aside and back to crash between writing data and
	// indexing it, and removes it to lose the index.
	IndexDir string
	// Units lists the data units holding records (pack files, objects).
	Units func(t testing.TB) []string
	// ReadUnit returns a unit's bytes.
	ReadUnit func(t testing.TB, name string) []byte
	// WriteUnit replaces a unit's bytes (a tampered or torn unit).
	WriteUnit func(t testing.TB, name string, data []byte)
	// RemoveUnit deletes a unit.
	RemoveUnit func(t testing.TB, name string)
}

// NewBackend makes a Backend over fresh, empty storage for t.
type NewBackend func(t *testing.T) Backend
