package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/relay"
)

// TestRelayVaults: a relay serving three vaults, each with a device that
// wrote a different amount, lists them with `weft relay vaults`, asked
// while it runs (through --metrics, which wants a bearer token) and from
// its home once it stops; `weft relay drop` deletes one replica (after a
// wrong confirmation did nothing) and refuses the vault; pprof is on its
// own address.
func TestRelayVaults(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rl := startRelay(t, "", "--listen", "/ip4/127.0.0.1/tcp/0", "--metrics", "127.0.0.1:0", "--metrics-token-file", tokenFile, "--pprof", "127.0.0.1:0")
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
	// The metrics address wants the token; profiles are not there but on
	// their own address.
	if _, err := devs[0].run("relay", "vaults", "--metrics", rl.metrics); err == nil || !strings.Contains(err.Error(), "bearer token") {
		t.Errorf("relay vaults without the token: %v, want a refusal naming the bearer token", err)
	}
	for _, u := range []struct {
		url  string
		want int
	}{{"http://" + rl.metrics + "/metrics", http.StatusUnauthorized}, {"http://" + rl.metrics + "/debug/pprof/", http.StatusUnauthorized}, {"http://" + rl.pprof + "/debug/pprof/", http.StatusOK}} {
		resp, err := http.Get(u.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != u.want {
			t.Errorf("GET %s: %d, want %d", u.url, resp.StatusCode, u.want)
		}
	}
	admin := []string{"--metrics", rl.metrics, "--metrics-token-file", tokenFile}
	var vs []relay.VaultInfo
	if err := json.Unmarshal([]byte(devs[0].must(append([]string{"relay", "vaults", "--json"}, admin...)...)), &vs); err != nil {
		t.Fatal(err)
	}
	check("running relay", vs, true)
	text := devs[0].must(append([]string{"relay", "vaults"}, admin...)...)
	for id := range ids {
		if !strings.Contains(text, id) {
			t.Errorf("relay vaults does not list %s:\n%s", id, text)
		}
	}

	// Drop the first vault: a wrong confirmation does nothing, the right
	// one deletes its replica and the vault is refused from then on.
	gone := vaultOf(t, devs[0])
	cmd := devs[0].command(append([]string{"relay", "drop", gone}, admin...)...)
	cmd.Stdin = strings.NewReader("nope\n")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not confirmed") {
		t.Fatalf("drop with a wrong confirmation: %v\n%s", err, out)
	}
	cmd = devs[0].command(append([]string{"relay", "drop", gone}, admin...)...)
	cmd.Stdin = strings.NewReader(gone[:8] + "\n")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "dropped") {
		t.Fatalf("drop: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(rl.home, "replicas", gone)); !os.IsNotExist(err) {
		t.Errorf("the dropped vault's replica directory: %v, want it gone", err)
	}
	delete(ids, gone)
	vs = nil
	if err := json.Unmarshal([]byte(devs[0].must(append([]string{"relay", "vaults", "--json"}, admin...)...)), &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 {
		t.Fatalf("after the drop: %d vaults, want 2: %+v", len(vs), vs)
	}
	// Its device asks again (a restart enrolls at once) and is refused:
	// the relay's log says so and the vault stays dropped.
	devs[0].stop()
	devs[0].up()
	waitLog(t, rl, "operator dropped that vault", time.Minute)
	if _, err := os.Stat(filepath.Join(rl.home, "replicas", gone)); !os.IsNotExist(err) {
		t.Errorf("the dropped vault came back: %v", err)
	}

	rl.stop()
	vs = nil
	if err := json.Unmarshal([]byte(devs[0].must("--home", rl.home, "relay", "vaults", "--json")), &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 {
		t.Fatalf("stopped relay: %d vaults, want 2: %+v", len(vs), vs)
	}
	for _, v := range vs {
		if _, ok := ids[v.Vault]; !ok {
			t.Errorf("stopped relay lists %s", v.Vault)
		}
	}
	devs[0].must("--home", rl.home, "relay", "drop", gone, "--undo")
	if b, err := os.ReadFile(filepath.Join(rl.home, "dropped")); err != nil || strings.Contains(string(b), gone) {
		t.Errorf("after --undo the dropped list is %q (%v)", b, err)
	}
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

// waitLog waits until the relay's log holds want.
func waitLog(t *testing.T, r *relayProc, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		b, err := os.ReadFile(r.log)
		if err == nil && strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay's log has no %q after %s:\n%s", want, limit, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
