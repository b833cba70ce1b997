package home

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/keyfile"
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
	v, err := h.AddVault(root.Secrets(), filepath.Join(dir, "Notes"))
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
	if got, err := h.VaultSecrets(vs[0]); err != nil || got != root.Secrets() {
		t.Fatalf("vault secrets did not round-trip: %v", err)
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
			if _, err := h.AddVault(tt.root.Secrets(), tt.folder); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := h.AddVault(root.Secrets(), filepath.Join(dir, "Other")); err == nil {
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

// TestVaultSecretsOfAnOlderVault: a vault added before recovery existed
// holds its root secret (root.key), and its secrets derive from it; a
// vault added now holds no root secret at all.
func TestVaultSecretsOfAnOlderVault(t *testing.T) {
	dir := t.TempDir()
	h, err := Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	root := keys.RootSecret{9}
	v, err := h.AddVault(root.Secrets(), filepath.Join(dir, "Notes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(v.Dir, rootKeyFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a new vault's directory has a root secret file: %v", err)
	}
	// Turn it into what an older weft wrote.
	if err := os.Remove(filepath.Join(v.Dir, secretsFile)); err != nil {
		t.Fatal(err)
	}
	if err := keyfile.SaveRootSecret(filepath.Join(v.Dir, rootKeyFile), root); err != nil {
		t.Fatal(err)
	}
	if got, err := h.VaultSecrets(v); err != nil || got != root.Secrets() {
		t.Fatalf("secrets from root.key: %v", err)
	}
	// A root secret of another vault in its place is refused.
	if err := keyfile.SaveRootSecret(filepath.Join(v.Dir, rootKeyFile), keys.RootSecret{8}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.VaultSecrets(v); !errors.Is(err, keyfile.ErrCorrupt) {
		t.Fatalf("another vault's root secret: got %v, want %v", err, keyfile.ErrCorrupt)
	}
	if err := os.Remove(filepath.Join(v.Dir, rootKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.VaultSecrets(v); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), secretsFile) {
		t.Fatalf("no secrets at all: got %v, want a missing %s", err, secretsFile)
	}
}
