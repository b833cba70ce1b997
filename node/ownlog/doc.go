// Package ownlog keeps a device from signing two entries with one
// (author, seq) after a start (docs/sync.md, "A device's own log").
//
// After a start a device cannot tell from its own disk alone whether it
// still holds the whole of its own log: a segment cut short, or a home
// restored from an older copy of itself, leaves its head below what peers
// and relays already hold of it, and authoring then would reuse sequence
// numbers those peers hold: a fork they refuse. So authoring is held (Gate)
// until a peer or relay has said how much of this device's log it holds,
// and anything it names has been taken back (VerifyTail: they are this
// device's own, signed by its key). The decision itself is
// engine.AuthoringGate, pure; Gate is the state around it that one vault
// keeps: what each peer said, what was taken back, the changes scans found
// while authoring was held, the rescan owed when it opens, a fork seen.
//
// The package holds state and rules only: the vault asks and carries out
// (logs, events, the rescan).
package ownlog
