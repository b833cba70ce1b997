package home

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

// A vault is visible to Vaults only once AddVaultPrepared completed: while
// prepare runs it is not listed, a failing prepare leaves nothing behind,
// and a directory an interrupted add left without vault.json is skipped.
func TestAddVaultPrepared(t *testing.T) {
	dir := t.TempDir()
	h, err := Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.AddVault(keys.RootSecret{1}.Secrets(), filepath.Join(dir, "first")); err != nil {
		t.Fatal(err)
	}

	boom := errors.New("recording membership: disk full")
	var seen Vault
	_, err = h.AddVaultPrepared(keys.RootSecret{2}.Secrets(), filepath.Join(dir, "second"), func(v Vault) error {
		seen = v
		if vs, err := h.Vaults(); err != nil || len(vs) != 1 {
			t.Errorf("during prepare: Vaults = %d vaults, %v; want only the first", len(vs), err)
		}
		return os.WriteFile(filepath.Join(v.Dir, "db-stand-in"), []byte("x"), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := h.Vaults(); err != nil || len(vs) != 2 {
		t.Fatalf("after a prepared add: %d vaults, %v; want 2", len(vs), err)
	}
	if _, err := os.Stat(filepath.Join(seen.Dir, "db-stand-in")); err != nil {
		t.Errorf("what prepare wrote is gone: %v", err)
	}

	_, err = h.AddVaultPrepared(keys.RootSecret{3}.Secrets(), filepath.Join(dir, "third"), func(v Vault) error {
		seen = v
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing prepare: got %v, want %v", err, boom)
	}
	if _, err := os.Stat(seen.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed add left %s: %v", seen.Dir, err)
	}

	// An add killed before vault.json: its directory holds only the key.
	half := filepath.Join(h.Dir, vaultsDir, keys.RootSecret{4}.Vault().ID.String())
	if err := os.MkdirAll(half, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(half, secretsFile), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if vs, err := h.Vaults(); err != nil || len(vs) != 2 {
		t.Errorf("with a half-made vault directory: %d vaults, %v; want the 2 complete ones", len(vs), err)
	}
	// Adding that vault again clears what the interrupted add left.
	v, err := h.AddVault(keys.RootSecret{4}.Secrets(), filepath.Join(dir, "fourth"))
	if err != nil {
		t.Fatalf("adding over a half-made vault directory: %v", err)
	}
	if got, err := h.VaultSecrets(v); err != nil || got != (keys.RootSecret{4}).Secrets() {
		t.Errorf("secrets after adding over leftovers: %v", err)
	}
}

// Two adds of one vault at once (two `weft join`s): one wins, the other
// is told the vault is already here, and the winner's directory survives.
func TestAddVaultConcurrent(t *testing.T) {
	dir := t.TempDir()
	h, err := Open(filepath.Join(dir, "home"))
	if err != nil {
		t.Fatal(err)
	}
	root := keys.RootSecret{7}
	inPrepare, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := h.AddVaultPrepared(root.Secrets(), filepath.Join(dir, "a"), func(Vault) error {
			close(inPrepare)
			<-release
			return nil
		})
		first <- err
	}()
	<-inPrepare
	second := make(chan error, 1)
	go func() {
		_, err := h.AddVault(root.Secrets(), filepath.Join(dir, "b"))
		second <- err
	}()
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first add: %v", err)
	}
	if err := <-second; err == nil || !strings.Contains(err.Error(), "already on this device") {
		t.Fatalf("second add of the same vault: got %v, want already on this device", err)
	}
	vs, err := h.Vaults()
	if err != nil || len(vs) != 1 || vs[0].Folder != filepath.Join(dir, "a") {
		t.Fatalf("vaults after both adds: %+v, %v", vs, err)
	}
	if _, err := h.VaultSecrets(vs[0]); err != nil {
		t.Errorf("the winner's root secret: %v", err)
	}
}
