package node

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
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
		fs := v.status()
		if len(n.connectedMembers(v)) == 0 && len(v.roster.Members()) > 1 && fs.State == "in-sync" {
			fs.State = "offline"
		}
		st.Folders = append(st.Folders, fs)
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
		v.mu.Lock()
		theirs := v.peerHoldsLocked(d) // directly, or through a relay (relayholds.go)
		v.mu.Unlock()
		for a, s := range mine {
			if theirs[a] < s {
				return false
			}
		}
	}
	return true
}

// status is the vault's part of the status.
func (v *vault) status() api.FolderStatus {
	var connected []keys.DeviceID
	for _, c := range v.n.connectedMembers(v) {
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
		Written: v.db.Head(v.n.id.ID()).Seq, Errors: []api.PathMessage{},
	}
	// pending is what this device must still do itself; what peers
	// still need from it is pending_upload (and peers[].in_sync).
	fs.Pending = fs.PendingApply + fs.PendingFetch
	stop, stopped := v.fguard.Stopped()
	if stopped {
		fs.Errors = append(fs.Errors, api.PathMessage{Code: stop.Code, Reason: stop.Message, Since: sinceOf(stop.Since)})
	}
	home, homeFull := v.home.Current()
	if homeFull {
		fs.Errors = append(fs.Errors, api.PathMessage{Code: api.CodeHomeDiskFull, Reason: home.Message, Since: sinceOf(home.Since)})
	}
	held := v.heldErrors()
	fs.Errors = append(fs.Errors, held...)
	corrupt := v.damaged.Errors()
	fs.Errors = append(fs.Errors, corrupt...)
	for _, p := range slices.Sorted(maps.Keys(view.errs)) {
		fs.Errors = append(fs.Errors, api.PathMessage{Code: applyErrorCode(view.errs[p]), Path: p, Reason: view.errs[p]})
	}
	skipped := v.skippedErrors()
	fs.Errors = append(fs.Errors, skipped...)
	fs.Errors = append(fs.Errors, relayFull...)
	unwatched := v.fallback.Errors() // node/watchfallback
	fs.Errors = append(fs.Errors, unwatched...)
	switch {
	case stopped:
		fs.State, fs.Error = "error", stop.Message
	case homeFull:
		fs.State, fs.Error = "error", home.Message
	case view.scanning || !view.scanned:
		fs.State = "scanning"
	case stuck(fs.Errors) != "":
		fs.State, fs.Error = "error", stuck(fs.Errors)
	case len(held) > 0:
		fs.State = "held"
	case len(corrupt) > 0 && fs.Pending == 0:
		// A damaged file that is not being written again (it could not
		// be moved aside): nothing will fix it without the user.
		fs.State, fs.Error = "error", corrupt[0].Path+": "+corrupt[0].Reason
	case fs.Pending > 0:
		fs.State = "syncing"
	case len(skipped) > 0 || len(relayFull) > 0 || len(unwatched) > 0:
		// Everything else is done, but these paths cannot sync, a relay
		// takes none of what it lacks, or changes in part of the folder
		// are seen only by rescans.
		fs.State = "out-of-sync"
	default:
		fs.State = "in-sync"
	}
	v.logHealthStatus(&fs) // memberrecover.go, logtail.go
	return fs
}

// applyErrorCode is the code of a failed apply's reason.
func applyErrorCode(reason string) string {
	switch doctor.ErrorKind(reason) {
	case "disk-full":
		return api.CodeFolderDiskFull
	case "read-only":
		return api.CodeReadOnly
	case "permission":
		return api.CodePermission
	case "chunk-unavailable":
		return api.CodeChunkUnavailable
	case "local-edit":
		return api.CodeLocalEdit
	}
	return api.CodeApplyFailed
}

// sinceOf is t for PathMessage.Since, nil when unknown.
func sinceOf(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// maxSkippedShown bounds the skipped paths status lists one by one.
const maxSkippedShown = 100

// skippedErrors lists the paths the last scans skipped and will skip
// again until the user acts (a name that cannot sync, a file over the
// size limit, one weft may not read), each with its code. Before, status
// said in-sync with errors [] while they never reached another device.
func (v *vault) skippedErrors() []api.PathMessage {
	m := v.n.monitor()
	if m == nil {
		return nil
	}
	skipped, _, _, _ := m.scans.Problems(v.cfg.Folder)
	var out []api.PathMessage
	more := 0
	for _, p := range slices.Sorted(maps.Keys(skipped)) {
		code := api.CodeCannotSync
		switch doctor.ErrorKind(skipped[p]) {
		case "local-edit":
			continue // settles by itself
		case "too-large":
			code = api.CodeTooLarge
		case "permission":
			code = api.CodePathUnreadable
		}
		if len(out) == maxSkippedShown {
			more++
			continue
		}
		out = append(out, api.PathMessage{Code: code, Path: p, Reason: skipped[p]})
	}
	if more > 0 {
		out = append(out, api.PathMessage{Code: api.CodeCannotSync, Reason: fmt.Sprintf("and %d more paths that cannot sync (`weft doctor` lists them)", more)})
	}
	return out
}

// stuck names the first error that needs the user to act (a full disk,
// a permission, a read-only file system) rather than a retry, or "".
func stuck(errs []api.PathMessage) string {
	for _, e := range errs {
		switch doctor.ErrorKind(e.Reason) {
		case "disk-full", "permission", "read-only":
			return e.Path + ": " + e.Reason
		}
	}
	return ""
}

// isConflictCopy reports whether a path is named like a conflict copy
// (protocol.ConflictName).
func isConflictCopy(p string) bool { return protocol.IsConflictCopy(p) }

// isConflictCopyOf reports whether q is named like a conflict copy of p:
// in p's directory, p's stem, then ".conflict-" (protocol.ConflictName).
func isConflictCopyOf(q, p string) bool {
	stem := strings.TrimSuffix(path.Base(p), path.Ext(p))
	return path.Dir(q) == path.Dir(p) && strings.HasPrefix(path.Base(q), stem+".conflict-")
}
