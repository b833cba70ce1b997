package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// TestRelayRatePerVault: with --rate-per-vault 256KiB a 1 MiB upload to
// the relay takes at least the time the rate allows (a bound no load can
// break: the uploaded bytes, less one burst, over the rate).
func TestRelayRatePerVault(t *testing.T) {
	rl := startRelay(t, "", "--listen", "/ip4/127.0.0.1/tcp/0", "--rate-per-vault", "256KiB")
	a := newDevice(t, "a")
	a.must("init", a.folder, "--relay", rl.addr())
	a.up()
	waitStatus(t, a, time.Minute, func(st api.Status) error {
		for _, p := range st.Peers {
			if p.Role == "relay" && p.Connection != "offline" {
				return nil
			}
		}
		return fmt.Errorf("relay not connected")
	})
	const size = 1 << 20
	t0 := time.Now()
	a.write("big.bin", randBytes(rand.New(rand.NewPCG(8, 8)), size))
	waitStatus(t, a, 2*time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.Files != 1 || f.Unsafe != 0 {
			return fmt.Errorf("%d files, unsafe %d; want 1 and 0", f.Files, f.Unsafe)
		}
		return nil
	})
	took := time.Since(t0)
	least := time.Duration(float64(size-64<<10) / (256 << 10) * float64(time.Second))
	t.Logf("1 MiB uploaded through a 256 KiB/s vault rate in %s (at least %s)", took, least)
	if took < least {
		t.Errorf("upload took %s, less than the rate allows (%s)", took, least)
	}
}
