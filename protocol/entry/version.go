package entry

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol/keys"
)

// VersionID names one file version across the vault: the version at Index in
// the Body of the entry that Author wrote with sequence number Seq. It is
// opaque to relays (it says nothing about the path) but unique and stable.
type VersionID struct {
	Author keys.DeviceID
	Seq    uint64
	Index  uint32
}

// Compare orders version IDs by author bytes, then sequence, then index. It
// returns -1, 0 or +1. Supersedes lists are kept in this order.
func (v VersionID) Compare(w VersionID) int {
	if c := bytes.Compare(v.Author[:], w.Author[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Seq, w.Seq); c != 0 {
		return c
	}
	return cmp.Compare(v.Index, w.Index)
}

func (v VersionID) String() string {
	return fmt.Sprintf("%s/%d/%d", v.Author.Short(), v.Seq, v.Index)
}

// Kind is what a version is.
type Kind uint8

// Kinds. Zero is not a kind, so a forgotten field is an error, not a file.
const (
	KindFile     Kind = 1
	KindDir      Kind = 2
	KindSymlink  Kind = 3
	KindDeletion Kind = 4
)

// DeletionConfirmed, in a deletion's Mode, says that the author's user
// confirmed the deletion past the author's mass-delete guard (`weft
// deletions accept`, docs/folder.md): a receiving device applies it even
// when it deletes most of the folder there, instead of holding it for its
// own user. It is the author's claim, signed like the rest of the entry;
// a hostile member can make it too (docs/security.md).
const DeletionConfirmed uint32 = 1

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

// ChunkRef is one chunk of a file's content, in file order: the CID of its
// ciphertext (CIDv1, codec raw, BLAKE3-256) and the size of its plaintext.
type ChunkRef struct {
	CID  cid.Cid
	Size uint32
}

// Version is one file version, as the encrypted body carries it.
//
// Per kind (anything else is ErrBadVersion):
//   - KindFile: Mode has only permission bits (0o777). Hash is the BLAKE3-256
//     of the whole plaintext. Content is either Chunks (non-empty, sizes summing
//     to Size, Inline empty) or Inline (Chunks empty, len(Inline) == Size <=
//     InlineLimit, Hash matching Inline). Target is empty.
//   - KindDir: Mode has only permission bits; Size 0, zero Hash, no content,
//     no Target.
//   - KindSymlink: Target is the link text (non-empty, valid UTF-8, no NUL,
//     at most MaxTargetLen bytes); Size is len(Target); Mode 0, zero Hash, no
//     content.
//   - KindDeletion: Supersedes is non-empty (a deletion removes versions it
//     knows); Mode is 0 or DeletionConfirmed; Size, MTime 0, zero Hash, no
//     content, no Target.
//
// For every kind, Path obeys ValidatePath and Supersedes is strictly
// increasing by VersionID.Compare (so sorted and without duplicates).
type Version struct {
	Path       string
	Kind       Kind
	Mode       uint32 // permission bits; 0o100 etc. carry "executable"
	MTime      int64  // unix nanoseconds, as the author's filesystem said
	Size       uint64 // plaintext bytes (symlink: target length)
	Supersedes []VersionID
	Hash       [32]byte // BLAKE3-256 of the plaintext, files only
	Chunks     []ChunkRef
	Inline     []byte
	Target     string
}

// Body is the plaintext of an entry's encrypted body.
type Body struct {
	Versions []Version
}

// VersionHeader is the public shadow of one Version, readable by relays:
// the ciphertext CIDs of its chunks in order (duplicates kept) and the
// versions it supersedes. It must equal what the body says.
type VersionHeader struct {
	Refs       []cid.Cid
	Supersedes []VersionID
}
