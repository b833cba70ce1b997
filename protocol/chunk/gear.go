package chunk

import (
	"encoding/binary"

	"lukechampine.com/blake3"
)

// gearSeed names the gear table. The table is the first 2048 bytes of the
// BLAKE3 extendable output of this string, read as 256 little-endian
// uint64s; deriving it rather than listing it keeps the specification
// short and makes the table impossible to mistype. It is part of the format.
const gearSeed = "weft/v1 chunk gear"

// gear maps each byte value to a pseudo-random 64-bit number.
var gear = func() (g [256]uint64) {
	h := blake3.New(len(g)*8, nil)
	h.Write([]byte(gearSeed))
	out := h.Sum(nil)
	for i := range g {
		g[i] = binary.LittleEndian.Uint64(out[i*8:])
	}
	return g
}()
