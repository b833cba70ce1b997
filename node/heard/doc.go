// Package heard keeps what peers said about this device and its entries,
// for the vault to act on and report:
//
//   - EntryRefusals: when each peer's refusal of an entry this device sent
//     was last logged (at most one line per peer per RefusedLogEvery);
//   - ForkProbes: the fork probes to ask of peers that said an entry of
//     this device's own log does not chain onto theirs, and how to end the
//     running pull from each so the next one probes;
//   - Membership: whether the members this device reaches accept it or
//     refuse it as not a member (a revoked device is not told otherwise);
//   - Holdings: what each member and relay last said it holds of the
//     vault's logs, and what status and the doctor ask of that (unsafe
//     entries, what connected peers lack, who may hold a version);
//   - RelayReports: what each relay said of the vault's quota there and of
//     what the other devices it serves hold.
//
// Refused entries, told to the sender. A device that pulls a peer's log
// and refuses one of the entries it is sent ends the stream; before, it
// ended it without a word, so the sender never knew. A device whose own
// log had forked (a home restored from an older copy, one device key on two
// machines) kept writing entries its peers refused, 23 times in 2 minutes
// in one report, and showed in-sync. Now the refusing device sends the
// reason on the stream first (an Error frame: wire.CodeLogForked for an
// entry of the sender's own log that does not chain onto what it holds of
// that log, wire.CodeInvalidEntry otherwise), and the sender reads it
// (node's readRefusal, logproto.go). A claimed fork is then checked: the next
// pull from that peer asks for its copy of this device's log from the
// entry before the refused one (ForkProbes; node's requestVector), and a copy
// that differs from the one held here, signed by this device's own key,
// makes the folder's state error with code own-log-forked (node/logtail.go,
// checkOwnHeld). Any refusal is logged.
package heard
