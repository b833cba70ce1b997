package node

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// InitVault creates a new vault syncing folder: a fresh root secret, this
// device as its admin. It returns the root secret, whose recovery phrase
// the caller shows once.
func InitVault(h *home.Home, folder string, now time.Time) (keys.RootSecret, home.Vault, error) {
	id, err := h.Identity()
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	root, err := keys.GenerateRootSecret(rand.Reader)
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	hv, err := h.AddVault(root, folder)
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	defer db.Close()
	if err := db.AppendMember(member.Genesis(id, hv.ID, now.UnixMilli())); err != nil {
		return keys.RootSecret{}, home.Vault{}, fmt.Errorf("recording the vault's first member: %w", err)
	}
	return root, hv, nil
}

// JoinVault enrols this device in the vault an invite code names, syncing
// folder: it reaches the inviting device, proves the code, and records the
// vault's keys and membership in the home. The next (or running) `weft up`
// syncs the folder.
func JoinVault(ctx context.Context, h *home.Home, code, folder string) (home.Vault, error) {
	inv, err := member.ParseInvite(code)
	if err != nil {
		return home.Vault{}, err
	}
	id, err := h.Identity()
	if err != nil {
		return home.Vault{}, err
	}
	if inv.Inviter == id.ID() {
		return home.Vault{}, errors.New("this invite was made by this device; run `weft join` on the device that should join")
	}
	hst, err := newHost(HostConfig{Identity: id, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err != nil {
		return home.Vault{}, err
	}
	defer hst.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	j, err := RequestJoin(ctx, hst, id, inv)
	if err != nil {
		return home.Vault{}, err
	}
	hv, err := h.AddVault(j.Root, folder)
	if err != nil {
		return home.Vault{}, err
	}
	db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
	if err != nil {
		return home.Vault{}, err
	}
	defer db.Close()
	for _, r := range j.Records {
		if err := db.AppendMember(r); err != nil {
			return home.Vault{}, fmt.Errorf("recording membership: %w", err)
		}
	}
	peers := map[string][]string{inv.Inviter.String(): inv.Addrs}
	b, _ := json.Marshal(peers)
	u := &vaultdb.Update{}
	u.SetMeta(knownPeersMeta, b)
	if err := db.Commit(u); err != nil {
		return home.Vault{}, err
	}
	return hv, nil
}
