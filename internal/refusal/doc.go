// Package refusal counts and logs the streams a device or relay refuses
// to peers that are not (or not yet) admitted: a first frame too large to
// read before the check, a Hello that does not parse, a peer that is not a
// member of a vault served here, pairing attempts over the limit. Devices
// (node/) and relays (relay/) share it so that both report refusals the
// same way: a counter per protocol and reason for /metrics, and a WARN
// per peer at most once per interval, with a summary of the rest, so a
// flood of strangers cannot flood the log.
package refusal
