package node

import (
	"slices"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folderstate"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
)

// Status reports the node's state. docs/api.md is its contract.
func (n *Node) Status() api.Status {
	if m := n.monitor(); m != nil {
		// One status at a time while the problems are tracked: two
		// snapshots tracked out of order re-raised a cleared problem.
		m.statusMu.Lock()
		defer m.statusMu.Unlock()
	}
	st := api.Status{Device: n.id.ID().String(), Addrs: n.Addrs(), Folders: []api.FolderStatus{}, Peers: []api.PeerStatus{}}
	if st.Addrs == nil {
		st.Addrs = []string{}
	}
	members := map[keys.DeviceID]bool{}
	relays := map[keys.DeviceID]bool{}
	names := map[keys.DeviceID]string{}
	set := n.vaults.Load()
	for _, v := range set.list {
		if st.Name == "" {
			st.Name = v.roster.Name(n.id.ID())
		}
		st.Folders = append(st.Folders, v.status())
		for _, d := range v.roster.Members() {
			if d != n.id.ID() {
				members[d] = true
				if name := v.roster.Name(d); name != "" && names[d] == "" {
					names[d] = name
				}
			}
		}
		for _, r := range v.relays() {
			relays[r.dev] = true
			members[r.dev] = true
		}
	}
	for _, hv := range set.opening {
		// Config.OpenInRun: the vault's graph is still being loaded.
		st.Folders = append(st.Folders, api.FolderStatus{Path: hv.Folder, Vault: hv.ID.String(), State: "opening", Errors: []api.PathMessage{}})
	}
	now := n.now().UTC()
	for d := range members {
		ps := n.peerState(d)
		role := "device"
		if relays[d] {
			role = "relay"
		}
		n.mu.Lock()
		p := api.PeerStatus{
			ID: d.String(), Name: names[d], Role: role, Connection: "offline", InSync: n.peerInSync(d),
			BytesSent: ps.counters.bytesSent.Load(), BytesReceived: ps.counters.bytesReceived.Load(),
			MsgsSent: ps.counters.msgsSent.Load(), MsgsReceived: ps.counters.msgsReceived.Load(),
		}
		if ps.connected {
			p.Connection = ps.conn
			p.LastSeen = &now
		} else if !ps.lastSeen.IsZero() {
			t := ps.lastSeen.UTC()
			p.LastSeen = &t
		}
		n.mu.Unlock()
		if m := n.monitor(); m != nil {
			// The monitor's own samples, every observe.SampleEvery: a
			// status asked for often must not crowd the minute out.
			p.SentBytesPerSec, p.RecvBytesPerSec, _ = m.rates.Throughput(d)
		}
		st.Peers = append(st.Peers, p)
	}
	slices.SortFunc(st.Peers, func(a, b api.PeerStatus) int { return strings.Compare(a.ID, b.ID) })
	if m := n.monitor(); m != nil {
		m.problems.Track(st.Folders, n.now(), n.events.Publish) // node/api/problems.go
	}
	return st
}

// peerInSync reports whether d holds everything this device holds in every
// shared vault, as far as its last LogStatus said, or a relay said of it.
func (n *Node) peerInSync(d keys.DeviceID) bool {
	for _, v := range n.vaultsNow() {
		if !v.isPeer(d) {
			continue
		}
		mine := v.vector()
		theirs := v.relayWord.Holds(d, v.peers.Of(d)) // what d said, or a relay said of it (node/heard)
		for a, s := range mine {
			if theirs[a] < s {
				return false
			}
		}
	}
	return true
}

// status is the vault's part of the status: its counts, and the state and
// errors node/folderstate judges from the facts gathered here.
func (v *vault) status() api.FolderStatus {
	connectedMembers := v.agent.connectedMembers(v)
	var connected []keys.DeviceID
	for _, c := range connectedMembers {
		connected = append(connected, c.dev)
	}
	unsafe := v.unsafeCount()
	relayFull, full := v.relayFullErrors() // relayfull.go
	// A relay whose quota is full takes nothing: what it lacks is not
	// on its way (doctor said "being sent").
	connected = slices.DeleteFunc(connected, func(d keys.DeviceID) bool { return full[d] })
	upload := v.toUpload(connected)
	view := v.summary()
	fs := api.FolderStatus{
		Path: v.cfg.Folder, Vault: v.id.String(), InitialScanDone: view.scanned,
		Files: view.files, Bytes: view.bytes, Conflicts: len(view.conflicts),
		PendingApply: view.toApply, PendingFetch: view.toFetch, PendingBytes: view.pendingBytes, PendingUpload: upload, Unsafe: unsafe,
		Written: v.db.Head(v.device.ID()).Seq,
	}
	// pending is what this device must still do itself; what peers
	// still need from it is pending_upload (and peers[].in_sync).
	fs.Pending = fs.PendingApply + fs.PendingFetch
	facts := folderstate.Facts{
		Scanning: view.scanning, Scanned: view.scanned, Pending: fs.Pending,
		Held: v.heldErrors(), Damaged: v.damaged.Errors(), ApplyErrs: view.errs,
		Skipped: v.skipped(), RelayFull: relayFull, Unwatched: v.fallback.Errors(), // node/watchfallback
		LogFault: v.logFault(), // memberrecover.go
		Alone:    len(connectedMembers) == 0 && len(v.roster.Members()) > 1,
	}
	if stop, stopped := v.fguard.Stopped(); stopped {
		facts.Stopped = &folderstate.Problem{Code: stop.Code, Message: stop.Message, Since: stop.Since}
	}
	if home, full := v.home.Current(); full {
		facts.HomeFull = &folderstate.Problem{Code: api.CodeHomeDiskFull, Message: home.Message, Since: home.Since}
	}
	facts.UnconfirmedReason, facts.Unconfirmed = v.tail.Status() // logtail.go
	verdict := folderstate.Judge(facts)
	fs.State, fs.Error, fs.Errors = verdict.State, verdict.Error, verdict.Errors
	return fs
}

// skipped is what the last scans of the folder skipped and will skip
// again until the user acts (node/observe), path -> why.
func (v *vault) skipped() map[string]string {
	m := v.agent.monitor()
	if m == nil {
		return nil
	}
	skipped, _, _, _ := m.scans.Problems(v.cfg.Folder)
	return skipped
}

// isConflictCopy reports whether a path is named like a conflict copy
// (protocol.ConflictName).
func isConflictCopy(p string) bool { return protocol.IsConflictCopy(p) }
