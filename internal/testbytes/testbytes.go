package testbytes

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Seeded is n bytes of seeded random content: incompressible, and the
// same for the same seed.
func Seeded(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Text is n bytes of numbered lines: compressible (a sealed chunk of it is
// compressed).
func Text(n int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "line %d of a note that weft keeps in sync, peer to peer.\n", i)
	}
	return []byte(sb.String()[:n])
}
