package wire

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
)

// MaxVectorAuthors bounds a version vector on the wire: one author per
// device that ever wrote to the vault.
const MaxVectorAuthors = 4096

// VectorEntry is one author's highest contiguous sequence number held.
type VectorEntry struct {
	Author keys.DeviceID
	Seq    uint64
}

// LogRequest carries the opener's version vector and membership sequence;
// the answer is every membership record after MemberSeq and every entry the
// opener lacks, then the answerer keeps pushing new ones.
//
// Payload layout:
//
//	count (uvarint) | count x ( author (32 bytes) | seq (uvarint) ) | member seq (uvarint)
//
// Authors are strictly increasing by bytes, so a vector has one encoding.
// The member seq is always present (0 for "none"), so it has one encoding
// too.
type LogRequest struct {
	Vector []VectorEntry
	// MemberSeq is the sequence of the last membership record the sender
	// holds (member.State.Seq; 0 before genesis). In a LogRequest it saves
	// the answerer resending the records the opener has: at 1,000 members
	// the whole log is 233 KB, and decoding it costs the opener signature
	// and canonical-form checks. In a LogStatus it is the answerer's own
	// (informational).
	MemberSeq uint64
}

// AppendBinary appends the payload of r to b. It sorts a copy of the vector.
func (r LogRequest) AppendBinary(b []byte) []byte {
	b = appendVector(b, r.Vector)
	return appendUvarint(b, r.MemberSeq)
}

// appendVector appends a vector: count, then (author, seq) sorted by
// author. It sorts a copy.
func appendVector(b []byte, vec []VectorEntry) []byte {
	v := slices.Clone(vec)
	slices.SortFunc(v, func(a, b VectorEntry) int { return bytes.Compare(a.Author[:], b.Author[:]) })
	b = appendUvarint(b, uint64(len(v)))
	for _, e := range v {
		b = append(b, e.Author[:]...)
		b = appendUvarint(b, e.Seq)
	}
	return b
}

// vector parses what appendVector writes, with authors strictly
// increasing.
func (p *parser) vector() []VectorEntry {
	n := p.count("vector", 33, MaxVectorAuthors)
	out := make([]VectorEntry, 0, n)
	for i := 0; i < n && p.err == nil; i++ {
		var e VectorEntry
		copy(e.Author[:], p.fixed(32, "vector author"))
		e.Seq = p.uvarint("vector seq")
		if i > 0 && bytes.Compare(out[i-1].Author[:], e.Author[:]) >= 0 {
			p.fail("vector authors not strictly increasing")
		}
		out = append(out, e)
	}
	return out
}

// ParseLogRequest parses a LogRequest payload.
func ParseLogRequest(p []byte) (LogRequest, error) {
	ps := parser{b: p}
	r := LogRequest{Vector: ps.vector()}
	r.MemberSeq = ps.uvarint("member seq")
	if err := ps.end(); err != nil {
		return LogRequest{}, err
	}
	return r, nil
}

// LogStatus tells the opener where the answerer stands: sent once the
// catch-up is complete ("you now hold everything I hold"), and again
// whenever the answerer's vector grows without new entries for this opener
// (for example after it learns entries from the opener itself). It carries
// the answerer's vector, so the opener knows what the answerer holds: that
// is how a device learns its entries are safe elsewhere.
//
// A device answerer sends the whole vector in its first LogStatus on a
// stream and afterwards only the authors whose sequence changed since its
// previous LogStatus on that stream (the opener overwrites those authors
// in what it remembers); a relay sends the whole vector every time. A
// whole vector at 50 authors is about 1.8 KB (35 bytes an author), and it
// went out on every stream at every growth.
//
// Payload layout: as LogRequest.
type LogStatus = LogRequest

// ParseLogStatus parses a LogStatus payload.
func ParseLogStatus(p []byte) (LogStatus, error) { return ParseLogRequest(p) }

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// VectorOf lists a version vector (author -> highest sequence) as wire
// entries, in no particular order (AppendBinary sorts).
func VectorOf(v map[keys.DeviceID]uint64) []VectorEntry {
	out := make([]VectorEntry, 0, len(v))
	for a, s := range v {
		out = append(out, VectorEntry{Author: a, Seq: s})
	}
	return out
}

// VectorMap is the inverse of VectorOf.
func VectorMap(es []VectorEntry) map[keys.DeviceID]uint64 {
	v := make(map[keys.DeviceID]uint64, len(es))
	for _, e := range es {
		v[e.Author] = e.Seq
	}
	return v
}
