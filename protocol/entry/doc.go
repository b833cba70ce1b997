// Package entry encodes, signs, validates and seals weft's version-log
// entries.
//
// Every device appends to its own log. An Entry is one signed link of that
// log: the vault, the author, a sequence number (1, 2, 3, ...), the CID of
// the author's previous entry, a Lamport clock, the key epoch, the author's
// wall time, one public VersionHeader per file version (the chunk CIDs it
// references and the versions it supersedes, which relays need for storage
// and garbage collection), the encrypted Body, and an ed25519 signature over
// all of it.
//
// The encoding is canonical deterministic CBOR (RFC 8949 core deterministic
// encoding, arrays only, no maps, tags or indefinite lengths). Decoding
// re-encodes and compares, so one entry has exactly one byte form and one CID.
// The byte-level format is specified in docs/protocol/entries.md; golden
// vectors in testdata/ pin it.
//
// Life of an entry:
//
//	e, err := entry.New(entry.Config{Identity: id, Vault: v, Prev: head, ...}, body)  // author
//	raw := e.Bytes()                                                                  // send / store
//	e, err = entry.Validate(raw, v, knownHead)  // device or relay: canonical form, limits, signature, chain
//	b, err := entry.OpenBody(e, epochKeys)      // device only: decrypt, validate, match public headers
//
// Bytes a device reads back from its own log passed Validate and OpenBody
// before they were written; DecodeStored, ValidateStored and
// OpenStoredBody decode them without the canonical re-encode and check
// everything else (see stored.go for when that is safe).
//
// When Validate reports ErrSeqReplay for an entry whose sequence number is
// already stored with a different CID, DetectFork turns the two entries into
// a ForkProof that any third party can check with ForkProof.Verify.
//
// The package is pure: no IO, no clock, no global randomness. Time and
// randomness come in as arguments. All functions are safe for concurrent use;
// an *Entry is immutable once built or decoded.
package entry
