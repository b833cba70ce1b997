package node

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
)

// Relays lists the relays of every vault on this device.
func (b apiBackend) Relays() []api.RelayInfo {
	out := []api.RelayInfo{}
	self := b.id.ID()
	for _, v := range b.vaultsNow() {
		for _, r := range v.relays() {
			ri := api.RelayInfo{Folder: v.cfg.Folder, Vault: v.id.String(), Addr: r.addr, ID: r.info.ID.String(),
				Connected: b.host.Network().Connectedness(r.info.ID) == network.Connected}
			ri.Holds = v.peers.Of(r.dev)[self]
			if st, ok := v.relayWord.Quota(r.dev); ok {
				ri.Error = st.Err
				if st.Err == "" {
					q := st.Status
					ri.Quota = &api.RelayQuota{Bytes: q.Bytes, BytesLimit: q.BytesLimit, Entries: q.Entries,
						EntriesLimit: q.EntriesLimit, Full: q.Full, At: st.At.UTC()}
				}
			}
			out = append(out, ri)
		}
	}
	return out
}

// ChangeRelay adds or removes a relay of a vault (the only one when vault
// is zero) in its signed membership. Only an admin device may.
func (b apiBackend) ChangeRelay(vault keys.VaultID, addr string, remove bool) error {
	v := b.vault(vault)
	if v == nil && vault == (keys.VaultID{}) && len(b.vaultsNow()) == 1 {
		v = b.vaultsNow()[0]
	}
	if v == nil {
		return errors.New("no such vault on this device (name one with --vault when there are several)")
	}
	if remove {
		return v.removeRelay(addr)
	}
	// the dial loop (connect.DialLoop) picks the new relay up within a second.
	return v.addRelay(addr)
}
