// Package chunk cuts file content into content-defined chunks and seals each
// chunk into an encrypted, content-addressed envelope.
//
// Chunking is FastCDC-style: a gear hash rolls over the bytes and a cut falls
// where the hash of the last 64 bytes is small enough, subject to the minimum
// and maximum sizes in Params. Because a cut depends only on the bytes before
// it, an edit inside a large file changes only the chunks around the edit.
// The cutter is written here, not imported: its output is part of the format
// (peers must agree on boundaries for chunks to deduplicate) and golden
// vectors in testdata/ pin it.
//
// Sealing is deterministic within a key epoch of a vault: the same plaintext
// and the same Keys give byte-identical envelopes on every device. That lets
// a device re-create any chunk from the file it has instead of keeping a
// second copy, and lets identical content deduplicate. The envelope is
//
//	version (1) | flags (1) | epoch (4, big endian) | id (32) | XChaCha20-Poly1305 ciphertext
//
// where id is the plaintext's BLAKE3 hash keyed with the epoch's ChunkID key,
// the AEAD key and nonce are derived from the epoch's Chunk key and id, and
// the ciphertext holds the plaintext, zstd-compressed when that saves space.
// A chunk's CID is the CIDv1 (codec raw) of the BLAKE3-256 hash of its
// envelope, so anyone, a keyless relay included, can check a received chunk
// with VerifyCID. docs/protocol/chunks.md is the byte-level specification.
//
// The package does no IO beyond reading the io.Reader handed to a Chunker,
// and everything in it is safe for concurrent use except a Chunker.
package chunk
