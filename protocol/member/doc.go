// Package member holds a vault's membership: a hash-chained log of records
// signed by the vault's admin (who admits a device, who is revoked, which
// relays serve the vault), the state folded from it, and the one-time invite
// codes by which a new device joins. The genesis record also carries the
// vault key's proof that its maker holds the root secret (genesis.go).
//
// Relays verify membership without any vault key, so everything here is
// public to them (docs/security.md). The package is pure: no IO, no clock.
package member
