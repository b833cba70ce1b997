package record

import (
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/vaultdb"
)

// MaxVersionsPerEntry bounds how many versions one authored entry holds,
// well inside entry.MaxVersions, so entries stay quick to send.
const MaxVersionsPerEntry = 512

// MaxInlinePerEntry bounds the inline bytes of one authored entry, inside
// entry.MaxBodySize.
const MaxInlinePerEntry = 4 << 20

// MaxRefsPerEntry bounds the chunk references of one authored entry:
// inside entry.MaxRefs, and small enough that the entry (about 82 bytes a
// reference) fits one wire frame with room to spare (node's
// TestEntryAtRefLimitFitsAFrame). A version of a large file lists its
// pieces, not its chunks (entry.SplitChunks: a reference per 68 MiB or
// so), so this bounds how many files share an entry, not a file's size.
const MaxRefsPerEntry = 96_000

// Batch is what one entry records: its versions, and the index record of
// every path the batch's changes touched (those that record no version
// too, committed with the entry).
type Batch struct {
	Versions []entry.Version
	Paths    []string
	Records  []vaultdb.Record
	inline   int
	refs     int
}

// Fits reports whether ver may join b within an entry's limits. A
// version that fits no entry alone (a file over the limits, refused by the
// scan before it gets here) fits no batch: what b holds is committed
// first, and the version then goes alone.
func (b *Batch) Fits(ver entry.Version, p entry.PieceParams) bool {
	return len(b.Versions) < MaxVersionsPerEntry && b.inline+len(ver.Inline) <= MaxInlinePerEntry &&
		b.refs+ListedRefs(ver, p) <= MaxRefsPerEntry
}

// AddVersion adds ver to the batch.
func (b *Batch) AddVersion(ver entry.Version, p entry.PieceParams) {
	b.Versions = append(b.Versions, ver)
	b.inline += len(ver.Inline)
	b.refs += ListedRefs(ver, p)
}

// AddRecord adds the index record path keeps.
func (b *Batch) AddRecord(path string, rec vaultdb.Record) {
	b.Paths = append(b.Paths, path)
	b.Records = append(b.Records, rec)
}

// Empty reports whether the batch holds nothing to commit.
func (b *Batch) Empty() bool { return len(b.Versions) == 0 && len(b.Paths) == 0 }

// ListedRefs is how many references a version adds to its entry: its
// chunks, or its pieces when it has more than the pieces' Direct limit
// (an estimate from the average piece, for batching).
func ListedRefs(ver entry.Version, p entry.PieceParams) int {
	if len(ver.Chunks) <= p.Direct {
		return len(ver.Chunks)
	}
	return len(ver.Chunks)/max(p.Min, 1) + 1
}
