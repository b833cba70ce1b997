package entry

import (
	"testing"

	"lukechampine.com/blake3"
)

func TestSum256MatchesBlake3(t *testing.T) {
	buf := make([]byte, 300*1024+3)
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{0, 1, 64, 65, 1023, 1024, 1025, 2048, 2049, 3072, 4095, 4096, 4097, 14000, 16383, 16384, 16385, 32767, 32768, 32769, 49152, 65536, 65537, 16 * 16384, 16*16384 + 1, 17*16384 - 1, len(buf)} {
		if got, want := sum256(buf[:n]), blake3.Sum256(buf[:n]); got != want {
			t.Errorf("len %d: got %x, want %x", n, got, want)
		}
	}
}
