package node

import (
	"context"
	"log/slog"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
)

// rendezvousLoop runs DHT rendezvous (connect.Rendezvous) until ctx ends.
// With Config.NoDHT it returns at once. Its bootstrap set is
// Config.Bootstrap and every vault's relays; the vaults are asked afresh on
// every step, so a vault joined while the device runs is found too.
func (n *Node) rendezvousLoop(ctx context.Context) {
	if n.cfg.NoDHT {
		return
	}
	static, _ := connect.ParseBootstrap(n.cfg.Bootstrap) // New checked them
	r := &n.rdv
	r.Host, r.Self, r.Log, r.Now, r.Server, r.Prefix = n.host, n.id.ID(), n.log, n.now, n.cfg.DHTServer, relay.DHTPrefix
	r.Bootstrap = func() []peer.AddrInfo { return n.rendezvousPeers(static) }
	r.Vaults = func() []connect.RendezvousVault {
		var out []connect.RendezvousVault
		for _, v := range n.vaultsNow() {
			out = append(out, rendezvousVault{v})
		}
		return out
	}
	r.Run(ctx)
}

// rendezvousPeers is the DHT's bootstrap set: Config.Bootstrap and every
// vault's relays (a weft relay is a DHT server), without this device.
func (n *Node) rendezvousPeers(static []peer.AddrInfo) []peer.AddrInfo {
	seen := map[peer.ID]bool{n.host.ID(): true}
	var out []peer.AddrInfo
	add := func(i peer.AddrInfo) {
		if !seen[i.ID] {
			seen[i.ID] = true
			out = append(out, i)
		}
	}
	for _, i := range static {
		add(i)
	}
	for _, v := range n.vaultsNow() {
		for _, r := range v.relays() {
			add(r.info)
		}
	}
	return out
}

// rendezvousVault is a vault as connect.Rendezvous sees it.
type rendezvousVault struct{ v *vault }

// RendezvousKey is the vault's rendezvous key (keys.VaultKeys.Rendezvous),
// derived from its root secret (a member holds it: keys.VaultSecrets), so
// it never changes with key epochs.
func (r rendezvousVault) RendezvousKey() [32]byte       { return r.v.rendezvousKey() }
func (r rendezvousVault) Members() []keys.DeviceID      { return r.v.roster.Members() }
func (r rendezvousVault) IsMember(d keys.DeviceID) bool { return r.v.roster.IsMember(d) }
func (r rendezvousVault) Log() *slog.Logger             { return r.v.log }
func (r rendezvousVault) Remember(d keys.DeviceID, addrs []ma.Multiaddr) {
	r.v.agent.rememberPeer(r.v, d, addrs)
}

// rendezvousKey is the vault's rendezvous key (keys.VaultKeys.Rendezvous),
// derived from its root secret (a member holds it: keys.VaultSecrets), so
// it never changes with key epochs.
func (v *vault) rendezvousKey() [32]byte { return v.secrets.Vault().Rendezvous }
