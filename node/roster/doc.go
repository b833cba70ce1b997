// Package roster is one vault's membership as a device keeps it: the
// signed membership log folded into a member.State, read by every stream
// handler (is this peer a member, may this author write, what does a
// revocation keep) and changed by pairing, revocation, relay changes and
// records from peers. It has a lock of its own, a leaf that is never held
// while anything else is taken, so the questions asked on every stream do
// not wait for the vault's lock, and the rules of changing membership
// (only an admin signs, every record is stored durably before it counts)
// live in one place instead of one copy per operation.
//
// Invites are the one-time pairing codes a device issued (pairing itself,
// the /weft/pair/1 stream, stays in node: it needs the host).
//
// What follows a change (learning key epochs, ending a revoked device's
// connections, syncing with a new member) is the caller's: Roster returns
// the record it applied.
package roster
