package node

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/protocol/keys"
)

// RelayInfo is one relay of a folder's vault, as GET /v1/relays reports it.
type RelayInfo struct {
	Folder    string `json:"folder"`
	Vault     string `json:"vault"`
	Addr      string `json:"addr"`
	ID        string `json:"id"`
	Connected bool   `json:"connected"`
	// Holds is how many of this device's own entries the relay holds in
	// full (entries and chunks).
	Holds uint64 `json:"holds"`
	// Quota is what the relay last reported; nil before it answered.
	Quota *RelayQuota `json:"quota"`
	// Error is why the relay refused to serve the vault, if it did.
	Error string `json:"error,omitempty"`
}

// RelayQuota is a relay's account of a vault against its quota; a limit of
// 0 means none.
type RelayQuota struct {
	Bytes        uint64    `json:"bytes"`
	BytesLimit   uint64    `json:"bytes_limit"`
	Entries      uint64    `json:"entries"`
	EntriesLimit uint64    `json:"entries_limit"`
	Full         bool      `json:"full"`
	At           time.Time `json:"at"`
}

// Relays lists the relays of every vault on this device.
func (n *Node) Relays() []RelayInfo {
	out := []RelayInfo{}
	self := n.id.ID()
	for _, v := range n.vaultsNow() {
		for _, r := range v.relays() {
			ri := RelayInfo{Folder: v.cfg.Folder, Vault: v.id.String(), Addr: r.addr, ID: r.info.ID.String(),
				Connected: n.host.Network().Connectedness(r.info.ID) == network.Connected}
			v.mu.Lock()
			ri.Holds = v.peerVec[r.dev][self]
			if st, ok := v.relayStat[r.dev]; ok {
				ri.Error = st.err
				if st.err == "" {
					q := st.status
					ri.Quota = &RelayQuota{Bytes: q.Bytes, BytesLimit: q.BytesLimit, Entries: q.Entries,
						EntriesLimit: q.EntriesLimit, Full: q.Full, At: st.at.UTC()}
				}
			}
			v.mu.Unlock()
			out = append(out, ri)
		}
	}
	return out
}

// ChangeRelay adds or removes a relay of a vault (the only one when vault
// is zero) in its signed membership. Only an admin device may.
func (n *Node) ChangeRelay(vault keys.VaultID, addr string, remove bool) error {
	v := n.vault(vault)
	if v == nil && vault == (keys.VaultID{}) && len(n.vaultsNow()) == 1 {
		v = n.vaultsNow()[0]
	}
	if v == nil {
		return errors.New("no such vault on this device (name one with --vault when there are several)")
	}
	if remove {
		return v.removeRelay(addr)
	}
	// dialLoop picks the new relay up within a second.
	return v.addRelay(addr)
}

func (a *apiServer) relaysList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, a.n.Relays())
}

func (a *apiServer) relaysChange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Vault  string `json:"vault"`
		Addr   string `json:"addr"`
		Remove bool   `json:"remove"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var vid keys.VaultID
	if req.Vault != "" {
		var err error
		if vid, err = keys.ParseVaultID(req.Vault); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	if err := a.n.ChangeRelay(vid, req.Addr, req.Remove); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, a.n.Relays())
}
