package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/ipfs/go-cid"
)

// Helpers shared by the msg_*.go files. Every parse function works on a
// complete payload slice (ReadFrame already bounded it), checks each count
// against what the remaining bytes could possibly hold before allocating,
// and rejects trailing bytes, so a payload has one meaning.

// parser walks a payload.
type parser struct {
	b   []byte
	err error
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s", ErrMalformedPayload, fmt.Sprintf(format, args...))
	}
}

func (p *parser) uvarint(what string) uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.fail("%s: bad uvarint", what)
		return 0
	}
	// Minimal encoding only, so each message has one byte form.
	if n > 1 && p.b[n-1] == 0 {
		p.fail("%s: padded uvarint", what)
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) fixed(n int, what string) []byte {
	if p.err != nil {
		return nil
	}
	if len(p.b) < n {
		p.fail("%s: %d bytes left, need %d", what, len(p.b), n)
		return nil
	}
	out := p.b[:n]
	p.b = p.b[n:]
	return out
}

// count reads a uvarint element count and checks that count elements of at
// least minSize bytes each could fit in what is left, and that count is at
// most limit.
func (p *parser) count(what string, minSize, limit int) int {
	n := p.uvarint(what)
	if p.err != nil {
		return 0
	}
	if n > uint64(limit) || n*uint64(minSize) > uint64(len(p.b)) {
		p.fail("%s: count %d does not fit (limit %d, %d bytes left)", what, n, limit, len(p.b))
		return 0
	}
	return int(n)
}

// bytesField reads a uvarint length and that many bytes, at most limit.
func (p *parser) bytesField(what string, limit int) []byte {
	n := p.uvarint(what)
	if p.err != nil {
		return nil
	}
	if n > uint64(limit) {
		p.fail("%s: %d bytes, limit %d", what, n, limit)
		return nil
	}
	return p.fixed(int(n), what)
}

func (p *parser) cid(what string) cid.Cid {
	b := p.bytesField(what, maxCIDLen)
	if p.err != nil {
		return cid.Undef
	}
	c, err := cid.Cast(b)
	if err != nil {
		p.fail("%s: %v", what, err)
		return cid.Undef
	}
	if !cidMinimal(c, b) {
		p.fail("%s: non-canonical CID bytes", what)
		return cid.Undef
	}
	return c
}

// cidMinimal reports whether b is exactly c's canonical byte form.
func cidMinimal(c cid.Cid, b []byte) bool { return string(c.Bytes()) == string(b) }

func (p *parser) end() error {
	if p.err == nil && len(p.b) != 0 {
		p.fail("%d trailing bytes", len(p.b))
	}
	return p.err
}

// maxCIDLen bounds a CID on the wire: version, codec, multihash code and
// length varints plus a 64-byte digest fit easily.
const maxCIDLen = 96

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}
