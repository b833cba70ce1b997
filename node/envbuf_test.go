package node

import (
	"bytes"
	"testing"

	"github.com/weftsync/weft/protocol/chunk"
)

// TestEnvBufClasses: a fetched envelope is copied into a buffer of its
// size class (plainPools' classes plus the envelope overhead), so a window
// of average chunks holds average-size buffers; one larger than any valid
// envelope gets a buffer of its own, which is not pooled.
func TestEnvBufClasses(t *testing.T) {
	for _, tt := range []struct{ n, wantCap int }{
		{0, chunk.AvgSize + chunk.Overhead},
		{chunk.AvgSize + chunk.Overhead, chunk.AvgSize + chunk.Overhead},
		{chunk.AvgSize + chunk.Overhead + 1, 2*chunk.AvgSize + chunk.Overhead},
		{chunk.MaxEnvelopeSize, chunk.MaxEnvelopeSize},
		{chunk.MaxEnvelopeSize + 1, chunk.MaxEnvelopeSize + 1},
	} {
		env := bytes.Repeat([]byte{7}, tt.n)
		b := envBuf(env)
		if !bytes.Equal(*b, env) || cap(*b) != tt.wantCap {
			t.Errorf("envelope of %d bytes: got %d bytes in a buffer of %d, want a copy in one of %d", tt.n, len(*b), cap(*b), tt.wantCap)
		}
		releaseEnv(b)
	}
}
