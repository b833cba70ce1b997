package chunk

import (
	"encoding/binary"
	"fmt"
)

// Envelope layout (docs/protocol/chunks.md, "Envelope"):
//
//	offset  size  field
//	0       1     format version, FormatV1
//	1       1     flags: bit 0 = payload is zstd-compressed; others zero
//	2       4     key epoch, big-endian uint32
//	6       32    plaintext identity (ID)
//	38      n+16  XChaCha20-Poly1305 ciphertext of the payload and its tag,
//	              with bytes 0..37 as additional data
const (
	// FormatV1 is the only envelope format version. A new version is
	// needed for any change that alters envelope bytes for some plaintext:
	// compression rule, zstd output, key derivation, layout.
	FormatV1 = 1

	flagCompressed = 1 << 0
	knownFlags     = flagCompressed

	// HeaderSize is the size of the authenticated clear header.
	HeaderSize = 1 + 1 + 4 + 32
	// Overhead is how much larger an envelope is than its payload.
	Overhead = HeaderSize + TagSize
	// MaxEnvelopeSize bounds an envelope: a payload is never larger than
	// its plaintext, which is at most MaxSize.
	MaxEnvelopeSize = MaxSize + Overhead

	// TagSize is the size of the Poly1305 tag that ends an envelope.
	TagSize = 16
	tagSize = TagSize
)

// Header is the clear, authenticated part of an envelope.
type Header struct {
	Version    byte
	Compressed bool
	Epoch      uint32
	ID         ID
}

// ParseHeader decodes the header of an envelope without keys, so a node can
// pick the epoch's keys to Open it with. It returns ErrTruncated when the
// envelope cannot hold a header and tag, ErrTooLarge when it is over
// MaxEnvelopeSize, and ErrUnknownFormat for an unknown version or flag bit.
func ParseHeader(envelope []byte) (Header, error) {
	if len(envelope) < Overhead {
		return Header{}, fmt.Errorf("chunk envelope of %d bytes: %w", len(envelope), ErrTruncated)
	}
	if len(envelope) > MaxEnvelopeSize {
		return Header{}, fmt.Errorf("chunk envelope of %d bytes: %w", len(envelope), ErrTooLarge)
	}
	if envelope[0] != FormatV1 {
		return Header{}, fmt.Errorf("chunk envelope version %d: %w", envelope[0], ErrUnknownFormat)
	}
	if envelope[1]&^knownFlags != 0 {
		return Header{}, fmt.Errorf("chunk envelope flags %#02x: %w", envelope[1], ErrUnknownFormat)
	}
	h := Header{
		Version:    envelope[0],
		Compressed: envelope[1]&flagCompressed != 0,
		Epoch:      binary.BigEndian.Uint32(envelope[2:6]),
	}
	copy(h.ID[:], envelope[6:HeaderSize])
	return h, nil
}

// Tag returns the authentication tag that ends envelope, or false when it
// is too short to hold a header and a tag. Two envelopes of one identity
// under one epoch's keys with equal headers and equal tags hold the same
// ciphertext, unless someone holding the keys forged it (Poly1305 under a
// key only the epoch's holders can derive).
func Tag(envelope []byte) ([TagSize]byte, bool) {
	var t [TagSize]byte
	if len(envelope) < Overhead {
		return t, false
	}
	copy(t[:], envelope[len(envelope)-TagSize:])
	return t, true
}

// appendTo appends the encoding of h to b.
func (h Header) appendTo(b []byte) []byte {
	var flags byte
	if h.Compressed {
		flags |= flagCompressed
	}
	b = append(b, h.Version, flags)
	b = binary.BigEndian.AppendUint32(b, h.Epoch)
	return append(b, h.ID[:]...)
}
