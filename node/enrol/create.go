package enrol

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/relay"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// InitVault creates a new vault syncing folder: a fresh root secret, this
// device as its admin, and relays (multiaddrs ending in /p2p/ID) recorded
// in its membership, this device named name ("" for none). The vault is recoverable (member.FlagRecoverable):
// the home keeps only the secrets a member holds (keys.VaultSecrets), and
// the root secret is returned for the caller to show once as the recovery
// phrase, never stored.
func InitVault(h *home.Home, folder, name string, now time.Time, relays ...string) (keys.RootSecret, home.Vault, error) {
	if name != "" {
		if err := member.CheckName(name); err != nil {
			return keys.RootSecret{}, home.Vault{}, err
		}
	}
	for _, a := range relays {
		if _, _, err := relay.ParseAddr(a); err != nil {
			return keys.RootSecret{}, home.Vault{}, err
		}
	}
	id, err := h.Identity()
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	root, err := keys.GenerateRootSecret(rand.Reader)
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	hv, err := h.AddVaultPrepared(root.Secrets(), folder, func(hv home.Vault) error {
		db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.AppendMember(member.GenesisWith(id, root.VaultKey(), name, member.FlagRecoverable, now.UnixMilli())); err != nil {
			return fmt.Errorf("recording the vault's first member: %w", err)
		}
		for _, a := range relays {
			rec := db.MemberState().Next(id, member.Record{Op: member.OpAddRelay, Relay: a}, now.UnixMilli())
			if err := db.AppendMember(rec); err != nil {
				return fmt.Errorf("recording relay %s: %w", a, err)
			}
		}
		return nil
	})
	if err != nil {
		return keys.RootSecret{}, home.Vault{}, err
	}
	return root, hv, nil
}

// ChangeRelays adds (or, with remove, removes) a relay of the vault in the
// home while no agent runs (a running agent holds the database; use its
// API then). vaultHex selects the vault by ID prefix; empty means the only
// one. It returns the vault's relays afterwards.
func ChangeRelays(h *home.Home, vaultHex, addr string, remove bool, now time.Time) ([]string, error) {
	hv, err := pickVault(h, vaultHex)
	if err != nil {
		return nil, err
	}
	id, err := h.Identity()
	if err != nil {
		return nil, err
	}
	db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st := db.MemberState()
	if role, ok := st.Role(id.ID()); !ok || role != member.RoleAdmin {
		return nil, roster.ErrNotAdmin
	}
	op := member.Record{Op: member.OpAddRelay, Relay: addr}
	if remove {
		op.Op = member.OpRemoveRelay
		found := false
		for _, a := range st.Relays() {
			if info, _, err := relay.ParseAddr(a); a == addr || (err == nil && info.ID.String() == addr) {
				op.Relay, found = a, true
			}
		}
		if !found {
			return nil, fmt.Errorf("relay %q: %w", addr, roster.ErrNoSuchRelay)
		}
	} else if _, _, err := relay.ParseAddr(addr); err != nil {
		return nil, err
	}
	if err := db.AppendMember(st.Next(id, op, now.UnixMilli())); err != nil {
		return nil, err
	}
	return db.MemberState().Relays(), nil
}

// pickVault selects a vault of the home by hex ID prefix; empty selects
// the only vault.
func pickVault(h *home.Home, prefix string) (home.Vault, error) {
	vs, err := h.Vaults()
	if err != nil {
		return home.Vault{}, err
	}
	var match []home.Vault
	for _, v := range vs {
		if strings.HasPrefix(v.IDHex, strings.ToLower(prefix)) {
			match = append(match, v)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(vs) == 0:
		return home.Vault{}, errors.New("no vault on this device; create one with `weft init`")
	case len(match) == 0:
		return home.Vault{}, fmt.Errorf("no vault %q on this device", prefix)
	default:
		return home.Vault{}, errors.New("several vaults on this device; name one with --vault")
	}
}
