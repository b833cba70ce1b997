package wire

import "fmt"

// MaxMemberRecords bounds the membership records in a PairAccept.
const MaxMemberRecords = 4096

// MaxMemberRecord bounds one encoded membership record: the size
// protocol/member allows one (member.MaxRecordSize), so that a record with
// many sealed keys (a revocation in a vault of dozens of devices, an add
// or recover record after dozens of epochs) still travels.
const MaxMemberRecord = 16 << 10

// PairRequest is the joining device's proof that it holds an invite code
// (protocol/member.Invite.Proof), and the name it asks to be admitted
// under.
//
// Payload layout:
//
//	proof length (uvarint) | proof bytes (at most 64)
//	[ name length (uvarint, 1 to 64) | name (UTF-8) ]   absent when it has none
type PairRequest struct {
	Proof []byte
	Name  string
}

// MaxDeviceName bounds a device name in bytes (protocol/member.MaxNameLen).
const MaxDeviceName = 64

// AppendBinary appends the payload of r to b.
func (r PairRequest) AppendBinary(b []byte) []byte {
	b = appendBytes(b, r.Proof)
	if r.Name != "" {
		b = appendBytes(b, []byte(r.Name))
	}
	return b
}

// ParsePairRequest parses a PairRequest payload. It checks the name's
// length only; protocol/member.CheckName checks the rest.
func ParsePairRequest(p []byte) (PairRequest, error) {
	ps := parser{b: p}
	r := PairRequest{Proof: ps.bytesField("proof", 64)}
	if ps.err == nil && len(ps.b) > 0 {
		name := ps.bytesField("name", MaxDeviceName)
		if ps.err == nil && len(name) == 0 {
			return PairRequest{}, fmt.Errorf("%w: an empty name is sent as none", ErrMalformedPayload)
		}
		r.Name = string(name)
	}
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
