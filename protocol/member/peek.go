package member

import "encoding/binary"

// PeekSeq reads a record's sequence number from its encoding without
// decoding the rest, so a receiver can drop a record it already holds
// before paying for Decode (a CBOR decode, a re-encode to check canonical
// form, and for a genesis a signature check). ok is false when b does not
// start the way an encoded Record does; the caller then decodes it in full
// and gets Decode's error. A peeked sequence says nothing about whether b
// is a valid record: only use it to skip work, never to accept one.
func PeekSeq(b []byte) (seq uint64, ok bool) {
	// A Record is a CBOR array (toarray) whose first fields are Format
	// (unsigned), Vault (a 32-byte byte string) and Seq (unsigned).
	major, _, b, ok := cborHead(b)
	if !ok || major != 4 {
		return 0, false
	}
	if major, _, b, ok = cborHead(b); !ok || major != 0 {
		return 0, false
	}
	major, n, b, ok := cborHead(b)
	if !ok || major != 2 || n > uint64(len(b)) {
		return 0, false
	}
	b = b[n:]
	major, seq, _, ok = cborHead(b)
	if !ok || major != 0 {
		return 0, false
	}
	return seq, true
}

// cborHead splits a CBOR item head (RFC 8949 section 3) off b: the major
// type, the argument, and the rest. Indefinite lengths are refused.
func cborHead(b []byte) (major byte, arg uint64, rest []byte, ok bool) {
	if len(b) == 0 {
		return 0, 0, nil, false
	}
	major, info := b[0]>>5, b[0]&0x1f
	b = b[1:]
	switch {
	case info < 24:
		return major, uint64(info), b, true
	case info > 27:
		return 0, 0, nil, false
	}
	size := 1 << (info - 24) // 1, 2, 4 or 8 bytes
	if len(b) < size {
		return 0, 0, nil, false
	}
	var buf [8]byte
	copy(buf[8-size:], b[:size])
	return major, binary.BigEndian.Uint64(buf[:]), b[size:], true
}
