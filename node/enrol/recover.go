package enrol

import (
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/node/peerbook"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// RecoverVault enrols this device in the vault whose root secret root is
// (from its recovery phrase), syncing folder: it reaches from (a member
// device or relay of the vault, a multiaddr ending in /p2p/ID), proves the
// phrase, appends a recover record admitting this device as an admin, and
// records the vault's secrets (never root) and membership in the home.
// The next (or running) `weft up` syncs the folder.
func RecoverVault(ctx context.Context, h *home.Home, root keys.RootSecret, folder, from, name string, now time.Time) (home.Vault, error) {
	info, err := peer.AddrInfoFromString(from)
	if err != nil {
		return home.Vault{}, fmt.Errorf("--from %q: want a multiaddr ending in /p2p/ID: %w", from, err)
	}
	answerer, err := p2p.DeviceIDOf(info.ID)
	if err != nil {
		return home.Vault{}, err
	}
	id, err := h.Identity()
	if err != nil {
		return home.Vault{}, err
	}
	// Everything that can fail here is checked before the answerer
	// admits this device: a recover record stored there cannot be taken
	// back (a retry then finds the device admitted: RequestRecover).
	if err := h.CheckNewVault(root.Vault().ID, folder); err != nil {
		return home.Vault{}, err
	}
	hst, err := connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err != nil {
		return home.Vault{}, err
	}
	defer hst.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	records, err := RequestRecovery(ctx, hst, id, *info, answerer, root, name, now)
	if err != nil {
		return home.Vault{}, err
	}
	hv, err := h.AddVaultPrepared(root.Secrets(), folder, func(hv home.Vault) error {
		db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, r := range records {
			if err := db.AppendMember(r); err != nil {
				return fmt.Errorf("recording membership: %w", err)
			}
		}
		addrs := make([]string, 0, len(info.Addrs))
		for _, a := range info.Addrs {
			addrs = append(addrs, a.String())
		}
		b, _ := json.Marshal(map[string][]string{answerer.String(): addrs})
		u := &vaultdb.Update{}
		u.SetMeta(peerbook.MetaKey, b)
		return db.Commit(u)
	})
	if err != nil {
		return home.Vault{}, err
	}
	return hv, nil
}

// RequestRecovery runs the recovering side of /weft/recover/1 from host h
// (identity id) against info (device or relay answerer) and returns the
// membership log with this device's recover record last. It changes
// nothing on disk.
func RequestRecovery(ctx context.Context, h host.Host, id *keys.Identity, info peer.AddrInfo, answerer keys.DeviceID, root keys.RootSecret, name string, now time.Time) ([]member.Record, error) {
	if len(info.Addrs) == 0 {
		return nil, errors.New("no address to reach the device or relay at")
	}
	if err := h.Connect(ctx, info); err != nil {
		return nil, fmt.Errorf("reaching %s (is it running?): %w", info.ID, err)
	}
	s, err := h.NewStream(ctx, info.ID, wire.ProtoRecover)
	if err != nil {
		return nil, fmt.Errorf("opening a recovery stream (does %s run a weft that knows recovery?): %w", info.ID, err)
	}
	defer s.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = s.SetDeadline(dl)
	}
	f := wire.NewConn(s, nil)
	if err := f.OpenHello(root.Vault().ID); err != nil {
		return nil, fmt.Errorf("recovery: %w", err)
	}
	return netsync.RequestRecover(f, rand.Reader, id, answerer, root, name, now.UnixMilli())
}
