package wire

// /weft/recover/1: a device that holds a vault's recovery phrase and no
// membership asks a member device or relay for the membership log and
// appends its recover record (docs/protocol/membership.md, "Recovery";
// docs/security.md, "Recovery"). After the Hello:
//
//	opener   -> RecoverProof (the vault key's signature, protocol/member.RecoveryProof)
//	answerer -> MemberLog    (every record it holds) or Error
//	opener   -> Member       (its recover record, chained onto that log)
//	answerer -> MemberLog    (every record it holds, the recover record last) or Error

// MaxRecoverProofFrame bounds a RecoverProof frame: type, proof length,
// proof. The opener is a stranger until its proof checks.
const MaxRecoverProofFrame = 1 + 1 + 64

// RecoverProof is a recovering device's proof that it holds the vault's
// recovery phrase.
//
// Payload layout:
//
//	proof length (uvarint) | proof bytes (at most 64)
type RecoverProof struct {
	Proof []byte
}

// AppendBinary appends the payload of r to b.
func (r RecoverProof) AppendBinary(b []byte) []byte { return appendBytes(b, r.Proof) }

// ParseRecoverProof parses a RecoverProof payload.
func ParseRecoverProof(p []byte) (RecoverProof, error) {
	ps := parser{b: p}
	r := RecoverProof{Proof: ps.bytesField("proof", 64)}
	if err := ps.end(); err != nil {
		return RecoverProof{}, err
	}
	return r, nil
}

// MemberLog is a vault's whole membership log, in order.
//
// Payload layout:
//
//	count (uvarint, at least 1) | count x ( record length (uvarint) | record bytes )
type MemberLog struct {
	Records [][]byte
}

// AppendBinary appends the payload of m to b.
func (m MemberLog) AppendBinary(b []byte) []byte {
	b = appendUvarint(b, uint64(len(m.Records)))
	for _, r := range m.Records {
		b = appendBytes(b, r)
	}
	return b
}

// ParseMemberLog parses a MemberLog payload. Records alias p.
func ParseMemberLog(p []byte) (MemberLog, error) {
	ps := parser{b: p}
	n := ps.count("record count", 1, MaxMemberRecords)
	m := MemberLog{Records: make([][]byte, 0, n)}
	for i := 0; i < n && ps.err == nil; i++ {
		m.Records = append(m.Records, ps.bytesField("record", MaxMemberRecord))
	}
	if err := ps.end(); err != nil {
		return MemberLog{}, err
	}
	return m, nil
}
