// Package claims checks what peers say they hold (their LogStatus) against
// what they said before and what they sent: a relay that reports less than
// it reported before has lost data or is rolling the vault back
// (Checker.RelayHolds, a "relay-rollback"), and a peer that claims entries
// it skipped while it sent later ones withholds them
// (Checker.CheckWithheld, "withheld"). Either is logged, published as an
// error event and recorded durably in the vault's database, so a rollback
// across a restart of this device is caught too and a user can still see
// it after the relay caught up. It holds no lock and starts no goroutine:
// the vault's shell calls it from the log session that heard the status.
package claims
