package entry

import (
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// Validate is the one check devices and relays run on an entry they receive:
// it decodes data (see Decode for the shape and limit checks, in order), then
// rejects, in this order:
//
//  1. an entry of another vault than vault: ErrWrongVault;
//  2. a signature that is not the author's: ErrBadSignature;
//  3. the known head itself: ErrDuplicate (benign);
//  4. a sequence number at or below head.Seq: ErrSeqReplay (a replay, or a
//     fork if the stored entry with that number differs: see DetectFork);
//  5. a sequence number beyond head.Seq+1: ErrSeqGap (entries are missing);
//  6. a previous-entry CID other than head.CID: ErrPrevMismatch;
//  7. a Lamport clock not above head.Clock: ErrClockNotIncreasing.
//
// head is what the caller knows of the author's log in this vault; the zero
// Head means nothing is known, so the entry must have sequence 1.
//
// The returned entry is non-nil when err is nil and also when err is one of
// the chain errors 3-7: the entry is then authentic (decoded, canonical, of
// this vault, signed by its author) but does not extend head, and the caller
// may keep it for later, or pass it to DetectFork. For every other error it
// is nil.
//
// Validate does not decrypt the body (relays cannot); devices call OpenBody
// next. Membership (whether the author may write to the vault in this epoch)
// is the caller's check.
func Validate(data []byte, vault keys.VaultID, head Head) (*Entry, error) {
	e, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("validating entry: %w", err)
	}
	return e.check(vault, head)
}

// Authentic runs on an entry already decoded Validate's checks of the
// entry alone: checks 1 and 2, the vault and the author's signature, with
// Validate's errors. For an entry that New or Decode made it is
// Validate(e.Bytes(), vault, head) without the chain checks and without
// decoding the bytes again (an Entry is immutable, and New and Decode ran
// every check of the encoding); any other entry (DecodeStored and its
// kin skip the canonical-form check) is decoded again as Validate does.
func (e *Entry) Authentic(vault keys.VaultID) error {
	if !e.canonical {
		d, err := Decode(e.raw)
		if err != nil {
			return fmt.Errorf("validating entry: %w", err)
		}
		e = d
	}
	return e.checkOwn(vault, true)
}

// check runs Validate's checks 1-7 on a decoded entry and returns e, or
// nil for an error other than a chain error, as Validate documents.
func (e *Entry) check(vault keys.VaultID, head Head) (*Entry, error) {
	return e.checkChain(vault, head, true)
}

// checkChain is check, with the signature check only when sig is set
// (ChainStored clears it).
func (e *Entry) checkChain(vault keys.VaultID, head Head, sig bool) (*Entry, error) {
	if err := e.checkOwn(vault, sig); err != nil {
		return nil, err
	}
	return e.FollowsStored(head)
}

// checkOwn is what check tests of e alone: the vault and, with sig, the
// author's signature.
func (e *Entry) checkOwn(vault keys.VaultID, sig bool) error {
	if e.vault != vault {
		return fmt.Errorf("validating entry: vault %s, want %s: %w", e.vault, vault, ErrWrongVault)
	}
	if sig {
		if err := e.verifySig(); err != nil {
			return fmt.Errorf("validating entry: %w", err)
		}
	}
	return nil
}

// follows checks the chain rules 3-7 of Validate.
func (e *Entry) follows(head Head) error {
	switch seq := e.w.Seq; {
	case seq == head.Seq && e.id.Equals(head.CID):
		return ErrDuplicate
	case seq <= head.Seq:
		return fmt.Errorf("head is at %d: %w", head.Seq, ErrSeqReplay)
	case seq > head.Seq+1:
		return fmt.Errorf("head is at %d: %w", head.Seq, ErrSeqGap)
	}
	if head.Seq > 0 && !e.prev.Equals(head.CID) {
		return fmt.Errorf("links to %s, head is %s: %w", e.prev, head.CID, ErrPrevMismatch)
	}
	if e.w.Clock <= head.Clock {
		return fmt.Errorf("clock %d, head's %d: %w", e.w.Clock, head.Clock, ErrClockNotIncreasing)
	}
	return nil
}
