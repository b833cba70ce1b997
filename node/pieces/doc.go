// Package pieces keeps the chunk lists of a device's versions whole
// (protocol/entry/piece.go): it expands a body's chunk-list pieces from
// the vault's piece store, fetching and storing the ones it lacks first,
// and sets aside stored pieces that fail their check so a fetched copy
// can take their place. docs/sync.md, "Chunk-list pieces", has the rules.
//
// In memory and in the index a version always holds its whole chunk
// list; pieces exist only in entries and in the piece store. The author
// splits a large file's list into pieces just before signing the entry
// and stores them durably before the entry; a receiver fetches the
// pieces it lacks from the peer that sent the entry and stores them
// before the entry, so every entry in the log can be reopened, served and
// re-sent with its pieces.
//
// A piece missing from this device's own store (deleted, or rotted: the
// CID check finds it) does not stop the vault from opening: the version
// is kept with its piece references instead of its chunk list
// (ExpandStored), which is all the sync core needs to decide, and before
// the device acts on such a version it fetches the pieces again (Repair).
//
// It reads and writes only through a Store (vaultdb.DB is one), so it is
// tested without a node, a network or a disk.
package pieces
