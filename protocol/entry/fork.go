package entry

import (
	"bytes"
	"fmt"
)

// ForkProof is evidence that an author's key signed two different entries
// with one sequence number in one vault: a stolen key or a device restored
// from an old backup. Anyone holding it can check it with Verify, without
// any key. A and B are ordered by the bytes of their CIDs (A's first), so a
// fork has exactly one proof.
type ForkProof struct {
	A, B *Entry
}

// DetectFork decides whether stored (an entry already held) and incoming
// (one that Validate reported with ErrSeqReplay, typically) form a fork. It
// returns a ForkProof if they have the same vault, author and sequence
// number, different CIDs, and both valid signatures. Otherwise it returns
// ErrBadSignature if either signature is bad, or ErrNotFork.
func DetectFork(stored, incoming *Entry) (*ForkProof, error) {
	if stored == nil || incoming == nil {
		return nil, fmt.Errorf("detecting fork: missing entry: %w", ErrNotFork)
	}
	p := &ForkProof{A: stored, B: incoming}
	if bytes.Compare(p.A.id.Bytes(), p.B.id.Bytes()) > 0 {
		p.A, p.B = p.B, p.A
	}
	if err := p.Verify(); err != nil {
		return nil, fmt.Errorf("detecting fork: %w", err)
	}
	return p, nil
}

// Verify checks the proof: both entries validly signed, same vault, same
// author, same sequence number, different CIDs, in CID order. It returns nil,
// ErrBadSignature, or ErrNotFork.
func (p *ForkProof) Verify() error {
	if p.A == nil || p.B == nil {
		return fmt.Errorf("fork proof: missing entry: %w", ErrNotFork)
	}
	a, b := p.A, p.B
	if a.vault != b.vault || a.author != b.author || a.w.Seq != b.w.Seq {
		return fmt.Errorf("fork proof: different vault, author or sequence: %w", ErrNotFork)
	}
	switch c := bytes.Compare(p.A.id.Bytes(), p.B.id.Bytes()); {
	case c == 0:
		return fmt.Errorf("fork proof: the same entry twice: %w", ErrNotFork)
	case c > 0:
		return fmt.Errorf("fork proof: entries out of CID order: %w", ErrNotFork)
	}
	if err := p.A.verifySig(); err != nil {
		return fmt.Errorf("fork proof: %w", err)
	}
	if err := p.B.verifySig(); err != nil {
		return fmt.Errorf("fork proof: %w", err)
	}
	return nil
}

// wireForkProof is [a, b]: the two encoded entries.
type wireForkProof struct {
	_    struct{} `cbor:",toarray"`
	A, B []byte
}

// Bytes encodes the proof canonically: a CBOR array of the two encoded
// entries as byte strings, A first.
func (p *ForkProof) Bytes() []byte {
	return marshal(&wireForkProof{A: p.A.raw, B: p.B.raw})
}

// DecodeForkProof parses and verifies an encoded proof. It rejects anything
// Decode rejects in either entry, a non-canonical outer encoding, and
// whatever Verify rejects.
func DecodeForkProof(data []byte) (*ForkProof, error) {
	if len(data) > 2*MaxEntrySize+16 {
		return nil, fmt.Errorf("decoding fork proof: %d bytes: %w", len(data), ErrEntryTooLarge)
	}
	var w wireForkProof
	if err := unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("decoding fork proof: %w", err)
	}
	if !isCanonical(&w, data) {
		return nil, fmt.Errorf("decoding fork proof: %w", ErrNonCanonical)
	}
	a, err := Decode(w.A)
	if err != nil {
		return nil, fmt.Errorf("decoding fork proof: %w", err)
	}
	b, err := Decode(w.B)
	if err != nil {
		return nil, fmt.Errorf("decoding fork proof: %w", err)
	}
	p := &ForkProof{A: a, B: b}
	if err := p.Verify(); err != nil {
		return nil, err
	}
	return p, nil
}
