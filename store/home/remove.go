package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// RemoveVault deletes what AddVault and the vault's database wrote for v
// in the home (never the synced folder): it undoes a join that failed
// after AddVault, so no half-made vault is left for the agent to open.
func (h *Home) RemoveVault(v Vault) error {
	dir := filepath.Join(h.Dir, vaultsDir, v.ID.String())
	if v.Dir != dir {
		return fmt.Errorf("vault %s: directory %s is not the home's %s", v.IDHex, v.Dir, dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing vault %s: %w", v.IDHex, err)
	}
	return nil
}
