package home

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

func TestHome(t *testing.T) {
	dir := t.TempDir()
	h, err := Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Vaults(); !errors.Is(err, ErrNoVaults) {
		t.Fatalf("empty home: got %v, want %v", err, ErrNoVaults)
	}
	id, err := h.Identity()
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.Identity()
	if err != nil || again.ID() != id.ID() {
		t.Fatalf("the device key changed between loads: %v", err)
	}
	fi, err := os.Stat(filepath.Join(h.Dir, deviceKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("device key file mode: %v %v", fi.Mode(), err)
	}

	root := keys.RootSecret{1}
	v, err := h.AddVault(root, filepath.Join(dir, "Notes"))
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != root.Vault().ID {
		t.Fatalf("vault ID %s, want the one the root secret derives", v.IDHex)
	}
	vs, err := h.Vaults()
	if err != nil || len(vs) != 1 || vs[0].Folder != filepath.Join(dir, "Notes") {
		t.Fatalf("vaults: got %+v, %v", vs, err)
	}
	if got, err := h.RootSecret(vs[0]); err != nil || got != root {
		t.Fatalf("root secret did not round-trip: %v", err)
	}

	refused := []struct {
		name   string
		root   keys.RootSecret
		folder string
		want   error
	}{
		{"same folder", keys.RootSecret{2}, filepath.Join(dir, "Notes"), ErrFolderInVault},
		{"inside a synced folder", keys.RootSecret{3}, filepath.Join(dir, "Notes", "sub"), ErrFolderNested},
		{"around a synced folder", keys.RootSecret{4}, dir, ErrFolderNested},
		{"inside the home", keys.RootSecret{5}, filepath.Join(h.Dir, "x"), ErrFolderNested},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.AddVault(tt.root, tt.folder); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := h.AddVault(root, filepath.Join(dir, "Other")); err == nil {
		t.Fatal("the same vault was added twice")
	}

	if _, err := h.ReadAPIInfo(); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("no agent: got %v, want %v", err, ErrNoAgent)
	}
	info := APIInfo{Addr: "127.0.0.1:1234", Token: "t", PID: 7}
	if err := h.WriteAPIInfo(info); err != nil {
		t.Fatal(err)
	}
	if got, err := h.ReadAPIInfo(); err != nil || got != info {
		t.Fatalf("API info: got %+v, %v", got, err)
	}
	if err := h.RemoveAPIInfo(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReadAPIInfo(); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("after remove: got %v, want %v", err, ErrNoAgent)
	}
}
