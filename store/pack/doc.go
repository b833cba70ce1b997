// Package pack is weft's encrypted chunk store: the store a relay keeps every
// chunk of every vault it serves in, and the one a device keeps the chunks it
// was asked to hold in.
//
// Chunks are opaque bytes (already encrypted by the writer) named by their
// CID. They are appended to pack files, segments of up to PackSize bytes, so
// a 2 KiB chunk costs 2 KiB plus a small record header rather than a file
// system block and an inode. An index in goleveldb maps each CID to its pack,
// offset and length.
//
// # Durability
//
// Put returns only once the chunk is durable: its record is fsynced in the
// pack and then its index entry is written, in that order, so the index
// never points at bytes that are not on disk. The index write is not synced
// (the index is derived from the packs: Open indexes records a power loss
// took from it, see syncer.go), except for changes the packs cannot give
// back (renewals, GC relocations). Concurrent Put calls share one pack
// fsync and one index batch (group commit), and one batch is appended
// while the one before it is fsynced; see commit.go. After a failed index
// write (a full disk) the index is reopened in place before the next batch
// (heal.go). At Open, a torn pack tail is truncated, records that reached a
// pack but not the index are indexed again, index entries that point past a
// pack's end are dropped, and an index that goleveldb reports corrupt (or that
// is missing) is rebuilt by scanning the packs. docs/storage.md explains why
// these rules are enough.
//
// # Reads
//
// Get re-hashes what it reads and compares it with the CID; a mismatch is
// reported as ErrCorrupt and no bytes are returned.
//
// # Space
//
// GC takes the live set from the caller (a relay knows which chunks the
// retained entries reference), drops every other chunk older than a grace
// period from the index, and rewrites packs whose dead fraction passes a
// threshold, so disk use falls back without manual steps. Scrub re-verifies
// chunks in the background within a time budget and quarantines corrupt ones
// (drops them from the index so that they are fetched again).
//
// All file access goes through FS so that tests can inject disk-full and IO
// errors. The package knows nothing of networking.
package pack
