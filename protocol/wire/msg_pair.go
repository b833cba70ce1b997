package wire

// MaxMemberRecords bounds the membership records in a PairAccept.
const MaxMemberRecords = 4096

// MaxMemberRecord bounds one encoded membership record.
const MaxMemberRecord = 4096

// PairRequest is the joining device's proof that it holds an invite code
// (protocol/member.Invite.Proof).
//
// Payload layout:
//
//	proof length (uvarint) | proof bytes (at most 64)
type PairRequest struct {
	Proof []byte
}

// AppendBinary appends the payload of r to b.
func (r PairRequest) AppendBinary(b []byte) []byte { return appendBytes(b, r.Proof) }

// ParsePairRequest parses a PairRequest payload.
func ParsePairRequest(p []byte) (PairRequest, error) {
	ps := parser{b: p}
	r := PairRequest{Proof: ps.bytesField("proof", 64)}
	if err := ps.end(); err != nil {
		return PairRequest{}, err
	}
	return r, nil
}

// PairAccept admits the joining device: the vault's keys wrapped under the
// invite (protocol/member.Invite.Wrap) and the vault's membership records,
// the last of which admits the joiner.
//
// Payload layout:
//
//	wrapped keys length (uvarint) | wrapped keys (at most 256 bytes) |
//	count (uvarint) | count x ( record length (uvarint) | record bytes )
type PairAccept struct {
	WrappedKeys []byte
	Records     [][]byte
}

// AppendBinary appends the payload of a to b.
func (a PairAccept) AppendBinary(b []byte) []byte {
	b = appendBytes(b, a.WrappedKeys)
	b = appendUvarint(b, uint64(len(a.Records)))
	for _, r := range a.Records {
		b = appendBytes(b, r)
	}
	return b
}

// ParsePairAccept parses a PairAccept payload. Records alias p.
func ParsePairAccept(p []byte) (PairAccept, error) {
	ps := parser{b: p}
	a := PairAccept{WrappedKeys: ps.bytesField("wrapped keys", 256)}
	n := ps.count("record count", 1, MaxMemberRecords)
	a.Records = make([][]byte, 0, n)
	for i := 0; i < n && ps.err == nil; i++ {
		a.Records = append(a.Records, ps.bytesField("record", MaxMemberRecord))
	}
	if err := ps.end(); err != nil {
		return PairAccept{}, err
	}
	return a, nil
}
