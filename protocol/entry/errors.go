package entry

import (
	"errors"
	"fmt"
)

// Decoding errors (Decode, Validate, OpenBody).
var (
	// ErrMalformed means the bytes are not a well-formed entry or body: bad
	// CBOR, wrong array shape, wrong field type, a bad CID.
	ErrMalformed = errors.New("malformed")
	// ErrNonCanonical means the bytes decode but are not the one canonical
	// encoding of what they hold.
	ErrNonCanonical = errors.New("non-canonical encoding")
	// ErrUnknownFormat means the entry's format version is not one this
	// code understands.
	ErrUnknownFormat = errors.New("unknown format version")

	// ErrTooLarge is wrapped by every size-limit error below, so callers
	// may test either for the class or for the exact limit.
	ErrTooLarge = errors.New("over size limit")
	// ErrEntryTooLarge: the encoded entry exceeds MaxEntrySize.
	ErrEntryTooLarge = fmt.Errorf("%w: entry", ErrTooLarge)
	// ErrBodyTooLarge: the sealed body exceeds MaxBodySize.
	ErrBodyTooLarge = fmt.Errorf("%w: body", ErrTooLarge)
	// ErrTooManyVersions: more than MaxVersions versions in one entry.
	ErrTooManyVersions = fmt.Errorf("%w: versions", ErrTooLarge)
	// ErrTooManyRefs: more than MaxRefs chunk references in one entry.
	ErrTooManyRefs = fmt.Errorf("%w: chunk references", ErrTooLarge)
	// ErrTooManySupersedes: more than MaxSupersedes superseded versions in
	// one version.
	ErrTooManySupersedes = fmt.Errorf("%w: superseded versions", ErrTooLarge)
	// ErrFieldTooLarge: any other field (an array or string the CBOR
	// decoder bounds, a path, a symlink target) over its limit.
	ErrFieldTooLarge = fmt.Errorf("%w: field", ErrTooLarge)
)

// Chain and signature errors (Validate, New, DetectFork, ForkProof.Verify).
var (
	// ErrBadSignature means the signature is not the author's over the
	// entry's signing input.
	ErrBadSignature = errors.New("bad signature")
	// ErrWrongVault means the entry belongs to another vault.
	ErrWrongVault = errors.New("entry of another vault")
	// ErrSeqGap means the entry's sequence number is beyond head.Seq+1:
	// entries in between are missing.
	ErrSeqGap = errors.New("sequence gap")
	// ErrSeqReplay means the sequence number is at or below the known head
	// (and the entry is not the head itself): a replay of an old entry, or
	// a fork, which DetectFork decides.
	ErrSeqReplay = errors.New("sequence replay")
	// ErrDuplicate means the entry is the known head itself. It is benign.
	ErrDuplicate = errors.New("duplicate of head")
	// ErrPrevMismatch means the entry does not link to the known head's CID.
	ErrPrevMismatch = errors.New("previous-entry CID mismatch")
	// ErrClockNotIncreasing means the Lamport clock is not greater than the
	// previous entry's.
	ErrClockNotIncreasing = errors.New("clock not increasing")
	// ErrNotFork means DetectFork was given two entries that do not form a
	// fork (different author, vault or sequence, or the same entry twice).
	ErrNotFork = errors.New("not a fork")
)

// Body errors (OpenBody, New).
var (
	// ErrWrongEpoch means the epoch keys given are not the entry's epoch.
	ErrWrongEpoch = errors.New("wrong key epoch")
	// ErrBodyAuth means the sealed body failed authentication: wrong key,
	// tampered bytes, or a body moved from another entry.
	ErrBodyAuth = errors.New("body authentication failed")
	// ErrBadPath means a path breaks the rules of ValidatePath.
	ErrBadPath = errors.New("bad path")
	// ErrBadVersion means a file version is inconsistent (unknown kind,
	// content that does not fit its kind, sizes or hashes that disagree).
	ErrBadVersion = errors.New("bad version")
	// ErrHeaderMismatch means the public version headers do not match the
	// decrypted body.
	ErrHeaderMismatch = errors.New("public headers do not match body")
	// ErrPieceMismatch means a piece's bytes are not the ones its CID
	// names, or its chunks do not add up to the size its reference claims.
	ErrPieceMismatch = errors.New("piece does not match its reference")
)
