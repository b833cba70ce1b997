package wire

import (
	"github.com/weftsync/weft/protocol/keys"
)

// MaxEnrollRecords bounds the membership records one Enroll carries; a
// record is at most 4 KiB (protocol/member), so an Enroll stays far below
// MaxFrameSize.
const MaxEnrollRecords = 1024

// maxRecordSize mirrors protocol/member's record limit without importing it.
const maxRecordSize = 4 << 10

// Enroll asks a relay to serve a vault (or tells it of newer membership
// records): the opener of /weft/relay/1 sends the vault's whole membership
// log, oldest first. The relay checks the chain and signatures, that it is
// itself listed as a relay of the vault and that the opener is a member,
// and answers RelayStatus or Error (CodeNotMember, CodeQuotaExceeded).
//
// Payload layout:
//
//	vault (32) | count (uvarint) | count x ( length (uvarint) | record )
type Enroll struct {
	Vault   keys.VaultID
	Records [][]byte // encoded member.Record, oldest first
}

// AppendBinary appends the payload of e to b.
func (e Enroll) AppendBinary(b []byte) []byte {
	b = append(b, e.Vault[:]...)
	b = appendUvarint(b, uint64(len(e.Records)))
	for _, r := range e.Records {
		b = appendBytes(b, r)
	}
	return b
}

// ParseEnroll parses an Enroll payload. It checks sizes, not records.
func ParseEnroll(p []byte) (Enroll, error) {
	ps := parser{b: p}
	var e Enroll
	copy(e.Vault[:], ps.fixed(32, "vault"))
	n := ps.count("record count", 1, MaxEnrollRecords)
	for i := 0; i < n && ps.err == nil; i++ {
		e.Records = append(e.Records, ps.bytesField("record", maxRecordSize))
	}
	if err := ps.end(); err != nil {
		return Enroll{}, err
	}
	return e, nil
}

// RelayStatus is a relay's account of one vault it serves: what it stores
// against the vault's quota. A relay sends it in answer to Enroll and on
// every log stream a device opens to it (after Peers, and again when it
// changes), so a device can say "the relay is full" rather than wait.
// A limit of 0 means no limit. Full is set once a limit is reached: the
// relay then takes no new entries or chunks for the vault until space is
// freed, and keeps everything it already stores.
//
// Payload layout:
//
//	vault (32) | bytes (uvarint) | bytes limit (uvarint) |
//	entries (uvarint) | entries limit (uvarint) | full (1 byte: 0 or 1)
type RelayStatus struct {
	Vault        keys.VaultID
	Bytes        uint64
	BytesLimit   uint64
	Entries      uint64
	EntriesLimit uint64
	Full         bool
}

// AppendBinary appends the payload of s to b.
func (s RelayStatus) AppendBinary(b []byte) []byte {
	b = append(b, s.Vault[:]...)
	b = appendUvarint(b, s.Bytes)
	b = appendUvarint(b, s.BytesLimit)
	b = appendUvarint(b, s.Entries)
	b = appendUvarint(b, s.EntriesLimit)
	full := byte(0)
	if s.Full {
		full = 1
	}
	return append(b, full)
}

// ParseRelayStatus parses a RelayStatus payload.
func ParseRelayStatus(p []byte) (RelayStatus, error) {
	ps := parser{b: p}
	var s RelayStatus
	copy(s.Vault[:], ps.fixed(32, "vault"))
	s.Bytes = ps.uvarint("bytes")
	s.BytesLimit = ps.uvarint("bytes limit")
	s.Entries = ps.uvarint("entries")
	s.EntriesLimit = ps.uvarint("entries limit")
	switch f := ps.fixed(1, "full flag"); {
	case f == nil:
	case f[0] == 1:
		s.Full = true
	case f[0] != 0:
		ps.fail("full flag %d", f[0])
	}
	if err := ps.end(); err != nil {
		return RelayStatus{}, err
	}
	return s, nil
}
