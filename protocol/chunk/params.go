package chunk

import (
	"fmt"
	"math/bits"
)

// Chunk size bounds of the weft chunk format. They are the one place these
// numbers live: DefaultParams uses them and Seal refuses plaintexts over
// MaxSize. Changing MinSize, AvgSize or the gear table changes every
// boundary, and with it every CID, so it is a format change
// (docs/protocol/chunks.md, "Chunk sizes", gives the trade-off and the
// measurements behind these values).
const (
	// MinSize is the smallest chunk the cutter makes, except a file's last.
	MinSize = 32 << 10
	// AvgSize is the expected chunk size ignoring the MaxSize cap: a cut
	// is possible from MinSize on with probability 1/(AvgSize-MinSize) per
	// byte, so sizes are MinSize plus a geometric tail. The cap makes the
	// measured mean a little smaller (about 63.9 KiB on random data).
	AvgSize = 64 << 10
	// MaxSize is the largest chunk: the cutter cuts here when no content
	// cut was found, and Seal and Open refuse anything larger.
	MaxSize = 256 << 10
)

// window is how many trailing bytes decide whether a cut falls at a
// position: the gear hash shifts one bit per byte, so a 64-bit hash forgets
// a byte after 64 more.
const window = 64

// Params are chunking bounds. The zero value is not valid; use
// DefaultParams, or smaller bounds in tests. Params values are immutable
// once validated and safe for concurrent use.
type Params struct {
	Min, Avg, Max int

	// thr is the cut threshold: a cut falls where the gear hash is below
	// it. Set by Validate.
	thr uint64
}

// DefaultParams returns the bounds of the weft chunk format.
func DefaultParams() Params {
	p, err := NewParams(MinSize, AvgSize, MaxSize)
	if err != nil {
		panic("chunk: invariant: default params invalid: " + err.Error())
	}
	return p
}

// NewParams validates bounds and returns Params ready for use. It requires
// window (64) <= min, min+2 <= avg < max <= MaxSize; anything else is
// ErrBadParams.
func NewParams(min, avg, max int) (Params, error) {
	if min < window || avg < min+2 || max <= avg || max > MaxSize {
		return Params{}, fmt.Errorf("chunk params min=%d avg=%d max=%d: %w", min, avg, max, ErrBadParams)
	}
	// thr = 2^64 / (avg-min), so P(hash < thr) = 1/(avg-min) for a uniform
	// hash. When avg-min is a power of two, as in the defaults, the test
	// is "the top log2(avg-min) bits of the hash are zero".
	thr, _ := bits.Div64(1, 0, uint64(avg-min))
	return Params{Min: min, Avg: avg, Max: max, thr: thr}, nil
}

func (p Params) valid() bool { return p.thr != 0 }
