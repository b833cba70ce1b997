package node

import (
	"fmt"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/node/folderstate"
	"github.com/weftsync/weft/protocol/keys"
)

// A relay whose per-vault quota is reached keeps what it has and takes
// nothing new. Before, the device said in-sync, doctor said the entries
// the relay lacked "are being sent" and exited 0, while devices that were
// offline could get none of them from the relay. Now each such relay that
// lacks entries this device holds is an errors[] item with code relay-full
// naming the relay, the folder is out-of-sync (everything else may be
// done), doctor reports a problem, and what the relay lacks no longer
// counts as pending upload.

// relayFullErrors returns an errors[] item for each of the vault's relays
// that last reported its quota full and lacks entries this device holds,
// and the set of relays reporting a full quota.
func (v *vault) relayFullErrors() ([]api.PathMessage, map[keys.DeviceID]bool) {
	mine := v.vector()
	refs := v.relays()
	var out []api.PathMessage
	full := map[keys.DeviceID]bool{}
	for _, r := range refs {
		st, ok := v.relayWord.Quota(r.dev)
		if !ok || !st.Status.Full {
			continue
		}
		full[r.dev] = true
		theirs := v.peers.Of(r.dev)
		var lacking uint64
		for a, s := range mine {
			if h := theirs[a]; h < s {
				lacking += s - h
			}
		}
		if lacking == 0 {
			continue
		}
		q := st.Status
		out = append(out, api.PathMessage{Code: api.CodeRelayFull, Peer: r.dev.String(), Since: folderstate.Since(st.FullSince),
			Reason: fmt.Sprintf("relay %s has reached its quota for this vault (%s of %s, %d of %d entries) and takes none of the %d entries it lacks: devices that are offline now cannot get them from it",
				r.dev.Short(), doctor.HumanSize(int64(q.Bytes)), doctor.LimitSize(q.BytesLimit), q.Entries, q.EntriesLimit, lacking)})
	}
	return out, full
}
