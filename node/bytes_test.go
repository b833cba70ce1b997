package node

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// seededBytes is n bytes of seeded random content: incompressible.
func seededBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// textBytes is compressible: Seal compresses its chunks.
func textBytes(n int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "line %d of a note that weft keeps in sync, peer to peer.\n", i)
	}
	return []byte(sb.String()[:n])
}
