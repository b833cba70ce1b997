package node

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/node/api"
)

// A membership log whose genesis is garbled leaves the device knowing no
// member. Status must say so (an error coded membership-lost, never
// in-sync) and the device must not author: it cannot tell who else holds
// its log.
func TestDamagedMembershipIsReported(t *testing.T) {
	h, _ := testHome(t)
	hvs, err := h.Vaults()
	if err != nil || len(hvs) != 1 {
		t.Fatalf("vaults: %v, %v", hvs, err)
	}
	path := filepath.Join(hvs[0].DBDir(), "member", "members.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 16; i < 24; i++ {
		data[i] ^= 0xa5
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		NoWatcher: true, NoDHT: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		n.closeVaults()
		n.host.Close()
	}()
	v := n.vaultsNow()[0]
	if !v.membershipLost() {
		t.Fatal("membership not reported lost")
	}
	if !v.authoringHeld(nil) {
		t.Fatal("authoring open with the membership lost")
	}
	v.mu.Lock()
	v.scanned = true // as after the first scan
	v.mu.Unlock()
	fs := n.Status().Folders[0]
	if fs.State != "error" {
		t.Fatalf("state %q, want error", fs.State)
	}
	found := false
	for _, e := range fs.Errors {
		found = found || e.Code == api.CodeMembershipLost
	}
	if !found {
		t.Fatalf("errors %+v, want one coded %s", fs.Errors, api.CodeMembershipLost)
	}
}
