package engine

import (
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/chunk"
	"github.com/weftsync/weft/protocol/entry"
)

// Disk is the engine's view of what the folder index says a path holds:
// the version the index recorded there (zero when none is known, such as a
// file a scan found before any version named it) and the content, in the
// terms the core compares versions by.
type Disk struct {
	Version protocol.VersionID
	Kind    protocol.Kind
	// ContentHash is the file's whole-content hash, or SymlinkHash of a
	// symlink's target; zero for a directory.
	ContentHash [32]byte
	Mode        uint32
}

// SameContent reports whether head h holds what d says is on disk. All
// directories are alike.
func SameContent(h protocol.Version, d Disk) bool {
	if h.Kind != d.Kind {
		return false
	}
	switch d.Kind {
	case protocol.KindFile, protocol.KindSymlink:
		return h.ContentHash == d.ContentHash
	case protocol.KindDir:
		return true
	}
	return false
}

// SymlinkHash identifies a symlink's content for the core's identical-
// content rule: every device computes the same hash from the target.
func SymlinkHash(target string) [32]byte {
	var h [32]byte
	sum := chunk.SumCID([]byte("weft symlink\x00" + target)).Hash()
	copy(h[:], sum[len(sum)-32:])
	return h
}

// CoreVersion is the sync core's view of a body version carried by an
// entry with Lamport clock clock and Time t (unix ms): the one place the
// encoding's version becomes the core's.
func CoreVersion(id protocol.VersionID, clock uint64, t int64, v entry.Version) protocol.Version {
	cv := protocol.Version{
		ID:    id,
		Path:  v.Path,
		Kind:  v.Kind,
		Size:  v.Size,
		Mode:  v.Mode,
		MTime: v.MTime,
		Clock: clock,
		Time:  t,
	}
	cv.Supersedes = append(cv.Supersedes, v.Supersedes...)
	switch v.Kind {
	case entry.KindFile:
		cv.ContentHash = v.Hash
		// Text must be a function of the content. Inline bytes are checked
		// directly; a chunked file small enough to merge is treated as a
		// merge candidate, and if its bytes turn out not to be text the
		// merge refuses (ErrNotText) and the decision's fallback applies,
		// which every device computes alike from the same bytes.
		if len(v.Inline) > 0 || v.Size == 0 {
			cv.Text = protocol.IsText(v.Inline)
		} else {
			cv.Text = v.Size <= protocol.MaxMergeBytes
		}
	case entry.KindSymlink:
		cv.ContentHash = SymlinkHash(v.Target)
	}
	return cv
}
