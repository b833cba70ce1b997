package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/relay"
)

// TestRelayBackfillsFromAnotherRelay: a relay added to a vault gets
// everything from the vault's first relay while every device is offline,
// and a device that only ever reaches the added relay syncs from it.
//
// R1 and R2 serve the vault, R2 at first with a rate of 1 KiB/s, so that A
// enrolls the vault there but uploads next to nothing. A writes, waits
// until R1 holds everything, invites C and stops. R2 restarts without the
// rate while no device runs: what it now holds it can only have pulled
// from R1. Then R1 stops, and C, offline until now, gets every file from
// R2 alone.
func TestRelayBackfillsFromAnotherRelay(t *testing.T) {
	r1 := startRelay(t, "", "--listen", "/ip4/127.0.0.1/tcp/0")
	r2 := startRelay(t, "", "--listen", "/ip4/127.0.0.1/tcp/0", "--metrics", "127.0.0.1:0", "--rate-per-vault", "1KiB")
	r2addr, r2home := r2.addr(), r2.home
	a, c := newDevice(t, "a"), newDevice(t, "c")
	r2vaults := func() (relay.VaultInfo, error) {
		var vs []relay.VaultInfo
		out, err := c.run("relay", "vaults", "--metrics", r2.metrics, "--json")
		if err != nil {
			return relay.VaultInfo{}, err
		}
		if err := json.Unmarshal([]byte(out), &vs); err != nil || len(vs) != 1 {
			return relay.VaultInfo{}, fmt.Errorf("R2 lists %q (%v)", out, err)
		}
		return vs[0], nil
	}

	a.must("init", a.folder, "--relay", r1.addr())
	a.up()
	a.must("relay", "add", r2addr)
	rng := rand.New(rand.NewPCG(4, 2))
	for i := range 20 {
		a.write(fmt.Sprintf("notes/n-%02d.md", i), fmt.Appendf(nil, "note %d %x\n", i, rng.Uint64()))
	}
	a.write("media/clip.bin", randBytes(rng, 3<<20))
	waitStatus(t, a, 2*time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.Files != 21 || f.Unsafe != 0 {
			return fmt.Errorf("%d files, unsafe %d; want 21 and 0 (R1 holds everything)", f.Files, f.Unsafe)
		}
		return nil
	})
	out := a.must("invite")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.must("join", lines[len(lines)-1], c.folder)
	eventually(t, time.Minute, func() error {
		if _, err := r2vaults(); err != nil {
			return fmt.Errorf("waiting for A to enroll the vault at R2: %w", err)
		}
		return nil
	})
	a.stop()
	want, err := tree(a.folder)
	if err != nil {
		t.Fatal(err)
	}
	before, err := r2vaults()
	if err != nil {
		t.Fatal(err)
	}

	r2.stop()
	r2 = startRelayHome(t, "", r2home, "--listen", r2addr[:strings.Index(r2addr, "/p2p/")], "--metrics", "127.0.0.1:0")
	var after relay.VaultInfo
	eventually(t, 2*time.Minute, func() error {
		v, err := r2vaults()
		if err == nil && (v.Wanted != 0 || v.BytesStored < 3<<20) {
			err = fmt.Errorf("R2 holds %d bytes, wants %d chunks", v.BytesStored, v.Wanted)
		}
		after = v
		if err != nil {
			return fmt.Errorf("waiting for R2 to fill from R1: %w", err)
		}
		return nil
	})
	t.Logf("R2 held %d bytes when A stopped, %d after pulling from R1", before.BytesStored, after.BytesStored)
	if before.BytesStored >= 1<<20 {
		t.Fatalf("R2 held %d bytes before the backfill: the test does not show one", before.BytesStored)
	}

	r1.stop()
	c.up()
	waitTree(t, c, want, 3*time.Minute)
}
