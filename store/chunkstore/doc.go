// Package chunkstore is the contract every encrypted chunk store of weft
// meets: the pack files on a local disk (store/pack) and S3-compatible
// object storage (store/s3store). A relay keeps each vault's chunks in one
// and does not care which; store/storetest is the one conformance suite
// both pass.
//
// The contract, in short: Put returns only once the chunk is durable in
// the backend and indexed; Get re-hashes what it reads and never returns
// bytes that do not match their CID (ErrCorrupt, and the chunk is
// quarantined: dropped from the index and reported, so that it is fetched
// again); GC keeps a caller's live set and reclaims the rest after a grace
// period; a scrub re-reads stored chunks within a budget and quarantines
// what fails. A crash between writing data and indexing it loses nothing
// that Put acknowledged, and an index that points at data that is gone
// forgets it at the next Open instead of serving an error forever.
package chunkstore
