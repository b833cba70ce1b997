package netsync

import (
	"bytes"
	"testing"

	"github.com/weftsync/weft/protocol/chunk"
)

// TestCopyEnvelopeClasses: a lent envelope is copied into a buffer of its
// size class, so a window of average chunks holds average-size buffers;
// one larger than any valid envelope gets a buffer of its own (which
// ReleaseEnvelope drops, as its capacity is no class's).
func TestCopyEnvelopeClasses(t *testing.T) {
	for _, tt := range []struct{ n, wantCap int }{
		{0, chunk.AvgSize + chunk.Overhead},
		{chunk.AvgSize + chunk.Overhead, chunk.AvgSize + chunk.Overhead},
		{chunk.AvgSize + chunk.Overhead + 1, 2*chunk.AvgSize + chunk.Overhead},
		{chunk.MaxEnvelopeSize, chunk.MaxEnvelopeSize},
		{chunk.MaxEnvelopeSize + 1, chunk.MaxEnvelopeSize + 1},
	} {
		env := bytes.Repeat([]byte{7}, tt.n)
		b := CopyEnvelope(env)
		if !bytes.Equal(*b, env) || cap(*b) != tt.wantCap {
			t.Errorf("envelope of %d bytes: got %d bytes in a buffer of %d, want a copy in one of %d", tt.n, len(*b), cap(*b), tt.wantCap)
		}
		ReleaseEnvelope(b)
	}
}
