package entry

import "github.com/weftsync/weft/protocol"

// FormatV1 is the entry format without pieces (FormatV2, piece.go, is the
// other one this package reads and writes).
const FormatV1 = 1

// Limits. Every one is checked on decode before or while anything of that
// size is allocated, and on build so an author cannot produce an entry others
// reject. Changing one is a protocol change (docs/protocol/entries.md).
const (
	// MaxEntrySize bounds the complete encoded signed entry. It is checked
	// before any decoding.
	MaxEntrySize = 16 << 20
	// MaxBodySize bounds the sealed body (nonce, ciphertext and tag).
	MaxBodySize = 10 << 20
	// MaxVersions bounds the file versions in one entry. A first sync of
	// 10,000 files therefore takes at least 10 entries; authors typically
	// batch far fewer per entry to keep entries quick to send.
	MaxVersions = 1024
	// MaxRefs bounds the chunk references of one entry, summed over its
	// versions. At chunk.AvgSize (64 KiB) it admits an 8 GiB file; an
	// entry must also fit one wire frame (wire.MaxFrameSize, 8 MiB) at
	// about 80 bytes a reference, which is the tighter bound (about
	// 6.4 GiB), so authors cap a version's references below both
	// (node/record's MaxRefsPerEntry).
	MaxRefs = 1 << 17
	// MaxSupersedes bounds the versions one version supersedes.
	MaxSupersedes = 256
	// MaxPathLen bounds a path in bytes, MaxSegmentLen one of its segments:
	// the sync core's limits, which conflict names are made to fit.
	MaxPathLen    = protocol.MaxPathBytes
	MaxSegmentLen = protocol.MaxNameBytes
	// MaxTargetLen bounds a symlink target in bytes.
	MaxTargetLen = 4096
	// InlineLimit is the largest file whose bytes may travel inline in the
	// body instead of as chunks.
	InlineLimit = 4096
	// maxNesting is the deepest CBOR nesting any valid entry or body has
	// (entry > headers > header > refs > CID is 5), plus one.
	maxNesting = 6
)

// Sizes of fixed fields.
const (
	sigSize   = 64
	nonceSize = 24 // XChaCha20-Poly1305
	tagSize   = 16
)
