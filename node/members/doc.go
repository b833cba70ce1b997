// Package members answers for a vault's membership on a running device:
// invite codes and the joins they admit (/weft/pair/1), joins waiting for
// a person's approval, recoveries with the phrase (/weft/recover/1),
// admins and names, the vault's settings, and revocations.
//
// It is the answering side; node/enrol is the side that asks. node/roster
// keeps who is a member and signs and stores the records; members decides
// who may ask for what and speaks the two protocols over a wire.Conn it is
// handed, so its tests run over an in-memory pipe. The agent (node) owns
// the streams: it applies the stranger limits before a stream reaches
// members, counts and logs the refusals members returns (*Refusal), and
// does what follows an admission on the network (raised limits, the
// joiner's addresses remembered, a sync started).
package members
