// Package s3store keeps a vault's encrypted chunks in S3-compatible object
// storage (AWS S3, Cloudflare R2, Backblaze B2, Wasabi, MinIO, Ceph RGW,
// Garage, versitygw...), through github.com/minio/minio-go/v7, for a relay
// whose vaults outgrow one disk or whose operator wants the data on
// storage that is replicated and backed up for them. It meets the same
// contract as the pack store (store/chunkstore) and passes the same
// conformance suite (store/storetest).
//
// # Objects
//
// Chunks are grouped into objects of a few MiB (Config.ObjectSize), so
// that 10,000 notes are tens of PUTs, not 10,000. An object is a plain
// sequence of chunk records in store/chunkrec's framing, the same bytes a
// pack file holds, named PREFIX + "p/" + a 16-hex-digit sequence number
// and 16 random hex digits. Objects are written once and never modified:
// a GC that frees space copies an object's live records into new objects
// and deletes the old one after a grace period (Config.RetireGrace), so a
// reader that looked a chunk up just before still finds it.
//
// Concurrent Puts are gathered into one object (group commit, as the pack
// store shares one fsync), several objects upload at once
// (Config.Uploads), and a Put returns only once the PUT of the object
// holding its chunk has succeeded and the chunk is indexed.
//
// # The local index
//
// A goleveldb index in Config.IndexDir maps each CID to its object, offset
// and length, and lists the objects. It is derived state: at Open the
// store lists the objects under the prefix and indexes every object its
// index does not know (a PUT that succeeded before a crash took the index
// write), forgets the chunks of objects that are gone (the other way
// round), and, when the index is missing or corrupt, rebuilds it from the
// objects alone. The index write after a PUT is therefore not synced. What
// the index adds that the objects cannot give back is only the age of each
// chunk (a rebuilt index dates every chunk to the rebuild, which delays GC
// by one grace period) and the scrub cursor.
//
// # Reads and scrub
//
// Get reads the chunk's record with one ranged GET, checks its framing and
// re-hashes the chunk against its CID; a mismatch is quarantined (dropped
// from the index and reported through Config.OnQuarantine, so that the
// relay fetches the chunk again) and returns ErrCorrupt. A scrub step
// reads whole objects, one GET each, and verifies every record of them
// that the index still uses.
package s3store
