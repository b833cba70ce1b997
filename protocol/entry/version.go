package entry

import (
	"github.com/ipfs/go-cid"

	"github.com/weftsync/weft/protocol"
)

// VersionID names one file version across the vault: the version at Index in
// the Body of the entry that Author wrote with sequence number Seq. It is
// opaque to relays (it says nothing about the path) but unique and stable.
// It is the sync core's protocol.VersionID: one vocabulary from the wire to
// the store (wire.go is the one place that converts it to and from bytes).
type VersionID = protocol.VersionID

// Kind is what a version is: the sync core's protocol.Kind. Zero is not a
// kind, so a forgotten field is an error, not a file.
type Kind = protocol.Kind

// Kinds.
const (
	KindFile     = protocol.KindFile
	KindDir      = protocol.KindDir
	KindSymlink  = protocol.KindSymlink
	KindDeletion = protocol.KindDeletion
)

// DeletionConfirmed, in a deletion's Mode, says that the author's user
// confirmed the deletion past the author's mass-delete guard (`weft
// deletions accept`, docs/folder.md): a receiving device applies it even
// when it deletes most of the folder there, instead of holding it for its
// own user. It is the author's claim, signed like the rest of the entry;
// a hostile member can make it too (docs/security.md).
const DeletionConfirmed uint32 = 1

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
	// Author is the author's device name when it wrote the entry, as the
	// author says it ("" for none; a device writes its name in its vault's
	// membership, but nothing checks the claim against the membership: a
	// member may write any name here, as it may write any content): sealed
	// with the body, so only members read it, and signed with the entry,
	// so every device reads the same name for the same version forever
	// (conflict copies are named with it, protocol.ConflictName). A body
	// with a name is format 3 (FormatV3); the name follows
	// member.CheckName's rules.
	Author string
}

// VersionHeader is the public shadow of one Version, readable by relays:
// the ciphertext CIDs of its chunks in order (duplicates kept) and the
// versions it supersedes. It must equal what the body says.
type VersionHeader struct {
	Refs       []cid.Cid
	Supersedes []VersionID
}
