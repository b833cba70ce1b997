package protocol

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// VersionID names one file version everywhere: the author's device, the
// sequence number of the author's log entry that carries it, and its index
// among that entry's versions. It is the one version name from the wire to
// the store: protocol/entry aliases it (entry.VersionID), so the core and
// the encoding share it and nothing converts between copies.
type VersionID struct {
	Author keys.DeviceID
	Seq    uint64
	Index  uint32
}

// Compare orders version IDs canonically: by author bytes, then sequence,
// then index. It returns -1, 0 or +1. The order means nothing about time; it
// only gives every device the same list order.
func (a VersionID) Compare(b VersionID) int {
	if c := bytes.Compare(a.Author[:], b.Author[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}

func (a VersionID) String() string {
	return fmt.Sprintf("%s/%d/%d", a.Author.Short(), a.Seq, a.Index)
}

// Kind is what a version puts at its path.
type Kind uint8

const (
	KindFile     Kind = 1 // a regular file; ContentHash is the whole-file hash
	KindDir      Kind = 2 // a directory; ContentHash is zero
	KindSymlink  Kind = 3 // a symbolic link; ContentHash is the hash of the target
	KindDeletion Kind = 4 // nothing: the path was deleted; ContentHash is zero
)

func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	case KindDeletion:
		return "deletion"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Version is the sync core's view of one file version: what it needs to
// order, compare and resolve versions, and nothing of how they are encoded,
// stored or fetched.
type Version struct {
	ID   VersionID
	Path string // slash-separated, relative, NFC (validated by the entry layer)
	// Kind, Text and Mode share one word (a graph holds a Version per
	// version: 176 bytes, not 192).
	Kind Kind

	// Text says whether the content is text that may be merged three-way.
	// node/ sets it with IsText over the file's content (or from a flag
	// the author recorded from IsText), so it is a function of the content
	// and every device sets it alike. It is only a hint that saves fetching
	// a base for binary files: Merge3 checks the actual bytes again.
	Text bool
	Mode uint32

	// ContentHash is the whole-file hash for files, a hash of the target
	// for symlinks, and zero for directories and deletions. Two versions
	// have the same content exactly when kind and hash are equal.
	ContentHash [32]byte
	Size        uint64
	MTime       int64  // unix nanoseconds, as recorded by the author's file system
	Clock       uint64 // Lamport clock of the entry that carries the version

	// Time is the entry's hybrid logical clock in unix milliseconds (the
	// entry's Time field): the author's clock corrected against its peers,
	// never going back and above every time the author had seen in the
	// vault's entries (docs/sync.md, "Clocks"). It orders concurrent
	// versions (WinnerOrder); it says nothing the version graph does not
	// already say about versions that supersede one another.
	Time int64

	// Supersedes lists the versions the author had at this path when it
	// wrote this one: its parents in the version graph. Each superseded
	// version's Clock must be lower than this version's Clock (the Lamport
	// rule guarantees it); the graph ignores an edge that breaks this rule,
	// which also makes cycles impossible.
	Supersedes []VersionID

	// AuthorName is the author's device name as the entry carrying the
	// version says it (entry.Body.Author; "" for an entry without one). It
	// is signed into the entry, so every device reads the same name for
	// the same version and names its conflict copies alike
	// (ConflictName).
	AuthorName string
}

// Validate checks the fields the core relies on. It reports an error
// wrapping ErrInvalidVersion.
func (v Version) Validate() error {
	if v.Path == "" {
		return fmt.Errorf("version %v: empty path: %w", v.ID, ErrInvalidVersion)
	}
	switch v.Kind {
	case KindFile, KindSymlink:
	case KindDir, KindDeletion:
		if v.ContentHash != ([32]byte{}) {
			return fmt.Errorf("version %v of %q: %v with a content hash: %w", v.ID, v.Path, v.Kind, ErrInvalidVersion)
		}
	default:
		return fmt.Errorf("version %v of %q: unknown kind %d: %w", v.ID, v.Path, uint8(v.Kind), ErrInvalidVersion)
	}
	for _, s := range v.Supersedes {
		if s == v.ID {
			return fmt.Errorf("version %v of %q: supersedes itself: %w", v.ID, v.Path, ErrInvalidVersion)
		}
	}
	return nil
}

// sameContent reports whether two versions put the same thing at a path:
// the same kind and, for files and symlinks, the same content hash.
// Directories are all alike; so are deletions. Mode is not compared: two
// versions that differ only in mode are resolved by the winner order
// without a conflict copy (see Resolve).
func sameContent(a, b Version) bool {
	return a.Kind == b.Kind && a.ContentHash == b.ContentHash
}

// WinnerOrder compares two concurrent versions by who keeps the name when
// they conflict. It returns +1 if a wins over b, -1 if b wins, and 0 only
// when the IDs are equal. The order is total, and uses only fields every
// device sees alike, so every device picks the same winner:
//
//  1. the later Time wins (the entry's hybrid logical clock: the edit made
//     last, by clocks the devices keep in step, keeps the name; an edit
//     made after its author saw the other version's entry is always later);
//  2. then the higher Lamport Clock;
//  3. then the greater author device ID (bytes);
//  4. then the higher Seq, then the higher Index.
//
// MTime plays no part: it is the author's file system's word, and a device
// whose clock is wrong records wrong mtimes, so with MTime first a device
// 48 h slow lost every conflict it took part in.
//
// Deletions and kind clashes are decided before this order applies (see
// Resolve).
func WinnerOrder(a, b Version) int {
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Clock, b.Clock); c != 0 {
		return c
	}
	return a.ID.Compare(b.ID)
}
