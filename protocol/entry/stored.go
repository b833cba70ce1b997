package entry

import (
	"fmt"

	"github.com/weftsync/weft/protocol/keys"
)

// Stored entries: the bytes a device reads back from its own log.
//
// Every entry enters a device's log only after Validate accepted it, and
// Validate's canonical-form check (Decode re-encodes the entry and
// compares) is what makes one entry have one byte form and so one CID. For
// bytes read back from that log the check proves nothing new, yet it costs
// a full re-encode of the entry, sealed body included: the largest single
// cost of reopening a vault of 100,000 files. DecodeStored and
// ValidateStored skip exactly that check and nothing else.
//
// They are safe only for bytes that were validated before they were
// written and come back through a checksum (store/vaultdb frames every
// record with a CRC-32C and, on reads by location, compares the bytes'
// CID with the one recorded when the entry was validated, so the bytes are
// the validated ones). They must never be used for bytes from the network,
// a relay or a file another program could have written: there a
// non-canonical form would give one signed entry a second CID.

// DecodeStored is Decode without the canonical-form check, for an entry
// read back from the device's own log. It checks, in Decode's order: total
// size, format version, CBOR well-formedness and decoder limits, per-field
// limits and field semantics, with Decode's errors. It does not check that
// data is the canonical encoding (never ErrNonCanonical), nor the
// signature or the chain (as Decode does not). The CID is computed from
// data as it is, so a caller that compares it with a CID recorded at
// validation time knows the bytes are the ones validated.
//
// Use it only under the conditions in the comment above; anything received
// goes through Validate.
func DecodeStored(data []byte) (*Entry, error) { return decode(data, false) }

// ValidateStored is Validate without the canonical-form check, for an
// entry read back from the device's own log when its chain must be checked
// again (reopening a log after a crash or damage). It runs DecodeStored's
// checks, then Validate's checks 1-7 (vault, the author's signature, then
// the chain against head(author), where author is the entry's claimed
// author), with Validate's errors and Validate's contract on the returned
// entry. The signature still binds every byte, so a tampered stored entry
// is rejected with ErrBadSignature; only a non-canonical encoding that its
// author signed would pass, and the log never accepted one.
//
// head is called once, after decoding, so the caller can look up the
// author's head without decoding the entry twice.
func ValidateStored(data []byte, vault keys.VaultID, head func(keys.DeviceID) Head) (*Entry, error) {
	e, err := decode(data, false)
	if err != nil {
		return nil, fmt.Errorf("validating stored entry: %w", err)
	}
	return e.check(vault, head(e.author))
}

// ChainStored is ValidateStored without the signature check, for an entry
// read back from the device's own log inside the prefix that this device
// verified at an earlier open or append and that a checkpoint proves
// unchanged since (store/vaultdb's log checkpoint: segment lengths and a
// CRC-32C of each). It runs DecodeStored's checks, the vault check and the
// chain rules 3-7 against head(author), with ValidateStored's errors and
// contract. Skipping the signature is sound only there: the bytes are the
// ones whose signature was checked, and an adversary who could rewrite them
// and the checkpoint together can also read the device's own signing key
// beside them. Anything else goes through ValidateStored or Validate.
func ChainStored(data []byte, vault keys.VaultID, head func(keys.DeviceID) Head) (*Entry, error) {
	e, err := decode(data, false)
	if err != nil {
		return nil, fmt.Errorf("validating stored entry: %w", err)
	}
	return e.checkChain(vault, head(e.author), false)
}

// OpenStoredBody is OpenBody without the canonical-form check of the body
// plaintext, for an entry read back from the device's own log, whose body
// OpenBody accepted before the entry was stored (a device stores an entry
// only after opening its body; reopening the vault fails otherwise). It
// checks everything else OpenBody does, in OpenBody's order and with its
// errors: the epoch, the body's authentication (the AEAD tag, under a key
// only members hold, over the exact bytes, which the author's signature
// also covers), well-formed CBOR within limits, the rules on Version and
// ValidatePath, and the public headers. It never returns ErrNonCanonical.
//
// Use it only for stored entries, as DecodeStored; anything received goes
// through OpenBody.
func OpenStoredBody(e *Entry, k keys.EpochKeys) (*Body, error) { return openBody(e, k, false) }

// PrepareStored is the part of ValidateStored (sig set) or ChainStored
// (sig clear) that does not depend on the chain: DecodeStored's checks,
// the vault check and, with sig, the author's signature, with their
// errors (a nil entry on any). The chain check follows, in log order, with
// FollowsStored. Split so a log can be reopened with the decoding and
// signatures of many entries on all cores and only the chain in order;
// the same conditions as ValidateStored's and ChainStored's apply.
//
// Unlike the other decoders, the entry keeps data rather than a copy of
// it (an open of a log of 100,000 small files copied 116 MB only to
// learn each entry's CID and head): the caller must not modify data
// while it holds the entry, nor after it unless it drops the entry first.
func PrepareStored(data []byte, vault keys.VaultID, sig bool) (*Entry, error) {
	e, err := decodeOwned(data, false)
	if err != nil {
		return nil, fmt.Errorf("validating stored entry: %w", err)
	}
	if err := e.checkOwn(vault, sig); err != nil {
		return nil, err
	}
	return e, nil
}

// FollowsStored checks a prepared entry (PrepareStored) against its
// author's head: Validate's chain rules, with its errors and its contract
// on the returned entry (e itself, also beside ErrDuplicate, ErrSeqReplay
// and ErrSeqGap, so the caller can tell them apart).
func (e *Entry) FollowsStored(head Head) (*Entry, error) {
	if err := e.follows(head); err != nil {
		return e, fmt.Errorf("validating entry %s seq %d: %w", e.author.Short(), e.w.Seq, err)
	}
	return e, nil
}
