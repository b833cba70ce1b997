package members

import (
	"fmt"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/roster"
)

// What membership says of this device in a folder's status: each is an
// error (nothing the device reports can be called in sync while it holds),
// or nil when it does not apply.

// RevokedMessage is the error of a device that was revoked: its own
// membership log says so (inLog), or refusedBy members refuse it as not a
// member and none accepts it (a revoked device is not told; it learns it
// from the members' answers, node/heard).
func RevokedMessage(inLog bool, refusedBy int) *api.PathMessage {
	if inLog {
		return &api.PathMessage{Code: api.CodeRevoked, Reason: "this device was revoked from the vault (its membership log says so): nothing it writes is accepted, and nothing new reaches it; ask an admin to add it again (`weft invite` on an admin device, then `weft join`)"}
	}
	if refusedBy == 0 {
		return nil
	}
	return &api.PathMessage{Code: api.CodeRevoked, Reason: fmt.Sprintf("%d members this device reached refuse it as not a member of the vault, and none accepts it: it was probably revoked; ask an admin to add it again (`weft invite` on an admin device, then `weft join`)", refusedBy)}
}

// LostMessage is the error while the membership log is damaged and not
// yet fetched whole again from a member (lost).
func LostMessage(lost bool) *api.PathMessage {
	if !lost {
		return nil
	}
	return &api.PathMessage{Code: api.CodeMembershipLost,
		Reason: "the membership log (member/members.log) is damaged; fetching it again from a member"}
}

// ForkMessage is the error once two admins changed the membership at the
// same time (roster.Fork; nil when none was seen).
func ForkMessage(f *roster.Fork) *api.PathMessage {
	if f == nil {
		return nil
	}
	return &api.PathMessage{Code: api.CodeMembershipForked, Reason: fmt.Sprintf(
		"two admins changed the vault's membership at the same time: record %d here is a %s by %s, a peer holds a %s by %s instead, so devices disagree about who is a member",
		f.Seq, f.Held.Op, f.Held.Signer.Short(), f.Other.Op, f.Other.Signer.Short())}
}
