package node

import (
	"path/filepath"
	"sync"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/members"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// Membership lost to damage. member/members.log is the source of truth of
// who belongs to the vault; bytes flipped in it make Open drop the records
// they hit and every record after them that no longer chains. If the
// genesis is hit, the device knows no member at all: it would dial nobody,
// answer nobody and still call itself in sync.
//
// What it still knows is enough to get the records back: its keys and the
// vault's root secret (the home), and where members were last reachable
// (the known-peers list in the index). While membership is lost it dials
// those remembered devices and opens log streams to them (never answering
// them: it cannot tell a revoked device from a member), asking for every
// record from the first. Each record is checked as always (State.Apply: the
// genesis proves the vault key whose hash is the vault ID, every later
// record is signed by an admin and chains onto the one before), so a peer
// can only send the vault's real records. Membership counts as back once
// this device is a member again and a peer's LogStatus names no record it
// lacks; members.log is then rewritten clean (vaultdb.RewriteMembers).
// Until then status reports the folder as an error with code
// membership-lost, and authoring is held (logtail.go).

// memberHealth is whether the membership log was found damaged at open and
// not yet confirmed complete by a peer. Its methods are safe for
// concurrent use.
type memberHealth struct {
	mu      sync.Mutex // guards the fields below
	damaged bool       // damage at open, not yet confirmed mended by a peer
	lost    bool       // last seen as lost (memberCheck reports the change once)
}

// memberDamaged reports whether Open found member/members.log damaged: bad
// bytes, a cut tail, or records dropped.
func memberDamaged(rep vaultdb.OpenReport) bool {
	name := filepath.Join("member", "members.log")
	for _, d := range append(append([]vaultdb.Damage(nil), rep.Damage...), rep.Truncated...) {
		if d.File == name {
			return true
		}
	}
	return rep.MemberDropped > 0
}

// membershipLost reports whether this vault's membership is not known
// whole: damaged at open and not yet confirmed by a peer, or not naming
// this device (a member that was never revoked: it lost the record that
// admitted it).
func (v *vault) membershipLost() bool {
	v.mh.mu.Lock()
	damaged := v.mh.damaged
	v.mh.mu.Unlock()
	if damaged {
		return true
	}
	return v.roster.Lost()
}

// fetchesMembershipFrom reports whether this device dials d and pulls from
// it although d is not a known member: membership is lost and d is a
// device it remembers as one.
func (v *vault) fetchesMembershipFrom(d keys.DeviceID) bool {
	if d == v.device.ID() || !v.membershipLost() {
		return false
	}
	_, ok := v.book.All()[d]
	return ok
}

// fetchesMembershipAnywhere is fetchesMembershipFrom for any vault here.
func (n *Node) fetchesMembershipAnywhere(d keys.DeviceID) bool {
	for _, v := range n.vaultsNow() {
		if v.fetchesMembershipFrom(d) {
			return true
		}
	}
	return false
}

// memberStatus is called with a peer's LogStatus membership sequence: a
// member or relay that holds no record this device lacks confirms the
// membership whole again.
func (v *vault) memberStatus(d keys.DeviceID, seq uint64) {
	if seq == 0 || !v.isPeer(d) || seq > v.roster.Seq() {
		return
	}
	v.mh.mu.Lock()
	v.mh.damaged = false
	v.mh.mu.Unlock()
	v.memberCheck(d)
}

// memberCheck notes a change of membershipLost after a record arrived or a
// peer confirmed the membership: once it is back, members.log is rewritten
// clean, the recovery is logged and published once, and the authoring gate
// re-decided.
func (v *vault) memberCheck(from keys.DeviceID) {
	lost := v.membershipLost()
	v.mh.mu.Lock()
	was := v.mh.lost
	v.mh.lost = lost
	v.mh.mu.Unlock()
	if !was || lost {
		return
	}
	if err := v.db.RewriteMembers(); err != nil {
		v.log.Warn("rewriting the membership log after fetching it again", "err", err)
	}
	v.log.Warn("membership log fetched again from a peer after damage", "peer", from, "records", v.roster.Seq())
	v.events.Publish(api.Event{Type: api.EventMembershipRecovered, Folder: v.cfg.Folder, Peer: from.String(), Count: int(v.roster.Seq())})
	v.tailCheck()
	// Members it could not know before are dialled and pulled from now.
	for _, d := range v.roster.Members() {
		if d != v.device.ID() {
			v.agent.syncWithDevice(d)
		}
	}
}

// logFault is the most serious fault of the vault's logs for its status
// (node/folderstate), or nil: this device revoked, its membership lost (it
// cannot tell who its peers are, so nothing it reports is in sync), its
// own log forked, the membership forked.
func (v *vault) logFault() *api.PathMessage {
	if m := members.RevokedMessage(v.roster.IsRevoked(v.device.ID()), v.refused.Refused()); m != nil {
		return m
	}
	if m := members.LostMessage(v.membershipLost()); m != nil {
		return m
	}
	if m := v.forkMessage(); m != nil { // entryrefusals.go
		return m
	}
	return members.ForkMessage(v.roster.Fork())
}
