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

// TestRelayVaults: a relay serving three vaults, each with a device that
// wrote a different amount, lists them with `weft relay vaults`, asked
// while it runs (through --metrics) and from its home once it stops.
func TestRelayVaults(t *testing.T) {
	rl := startRelay(t, "", "--listen", "/ip4/127.0.0.1/tcp/0", "--metrics", "127.0.0.1:0")
	ids := map[string]int{} // vault -> files written
	var devs []*device
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 3 {
		d := newDevice(t, fmt.Sprintf("v%d", i))
		d.must("init", d.folder, "--relay", rl.addr())
		d.up()
		for j := range i + 1 {
			d.write(fmt.Sprintf("f%d.bin", j), randBytes(rng, 64<<10+i))
		}
		waitStatus(t, d, 2*time.Minute, func(st api.Status) error {
			if f := st.Folders[0]; f.Files != i+1 || f.Unsafe != 0 {
				return fmt.Errorf("%d files, unsafe %d; want %d and 0", f.Files, f.Unsafe, i+1)
			}
			return nil
		})
		ids[vaultOf(t, d)] = i + 1
		devs = append(devs, d)
	}
	check := func(how string, vs []relay.VaultInfo, running bool) {
		t.Helper()
		if len(vs) != 3 {
			t.Fatalf("%s: %d vaults, want 3: %+v", how, len(vs), vs)
		}
		for _, v := range vs {
			files, ok := ids[v.Vault]
			switch {
			case !ok:
				t.Errorf("%s: vault %s was never made", how, v.Vault)
			case v.Devices != 1 || v.Entries < 1 || v.BytesStored < int64(files)*64<<10 || v.Chunks < int64(files):
				// (A batch of saves is one entry: entries count edits, not files.)
				t.Errorf("%s: vault %s: %+v; want 1 device, an entry, and at least %d chunks and %d KiB", how, v.Vault, v, files, files*64)
			case time.Since(v.LastActivity) > 10*time.Minute:
				t.Errorf("%s: vault %s last active %s", how, v.Vault, v.LastActivity)
			case running && (v.QuotaBytes != relay.DefaultQuota.Bytes || v.QuotaFull):
				t.Errorf("%s: vault %s quota %d (full %v), want the default", how, v.Vault, v.QuotaBytes, v.QuotaFull)
			}
		}
	}
	var vs []relay.VaultInfo
	if err := json.Unmarshal([]byte(devs[0].must("relay", "vaults", "--metrics", rl.metrics, "--json")), &vs); err != nil {
		t.Fatal(err)
	}
	check("running relay", vs, true)
	text := devs[0].must("relay", "vaults", "--metrics", rl.metrics)
	for id := range ids {
		if !strings.Contains(text, id) {
			t.Errorf("relay vaults does not list %s:\n%s", id, text)
		}
	}

	rl.stop()
	vs = nil
	if err := json.Unmarshal([]byte(devs[0].must("--home", rl.home, "relay", "vaults", "--json")), &vs); err != nil {
		t.Fatal(err)
	}
	check("stopped relay", vs, false)
}

// vaultOf is the ID of d's (only) vault.
func vaultOf(t *testing.T, d *device) string {
	t.Helper()
	var st api.Status
	if err := json.Unmarshal([]byte(d.must("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Folders) != 1 {
		t.Fatalf("%s has %d folders", d.name, len(st.Folders))
	}
	return st.Folders[0].Vault
}
