package node

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/node/peerbook"
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
		return nil, ErrNotAdmin
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
			return nil, fmt.Errorf("relay %q: %w", addr, ErrNoSuchRelay)
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

// JoinVault enrols this device in the vault an invite code names, syncing
// folder: it reaches the inviting device, proves the code, and records the
// vault's keys and membership in the home, asking to be named name (""
// for none). The next (or running) `weft up` syncs the folder.
// onPending is RequestJoin's: a code made with --confirm makes the join
// wait for approval, and the caller shows the words.
func JoinVault(ctx context.Context, h *home.Home, code, folder, name string, onPending func(words string)) (home.Vault, error) {
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
	hst, err := connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err != nil {
		return home.Vault{}, err
	}
	defer hst.Close()
	j, err := RequestJoin(ctx, hst, id, inv, name, onPending)
	if err != nil {
		return home.Vault{}, err
	}
	// The membership and the inviter's addresses are in the database
	// before the vault is visible: a crash part-way leaves no half-made
	// vault for an agent to open (AddVaultPrepared).
	hv, err := h.AddVaultPrepared(j.Secrets, folder, func(hv home.Vault) error {
		db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, r := range j.Records {
			if err := db.AppendMember(r); err != nil {
				return fmt.Errorf("recording membership: %w", err)
			}
		}
		peers := map[string][]string{inv.Inviter.String(): inv.Addrs}
		b, _ := json.Marshal(peers)
		u := &vaultdb.Update{}
		u.SetMeta(peerbook.MetaKey, b)
		return db.Commit(u)
	})
	if err != nil {
		return home.Vault{}, err
	}
	return hv, nil
}
