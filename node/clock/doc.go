// Package clock is how a device dates what it writes when its own wall
// clock may be wrong by days (docs/sync.md, "Clocks"): the offsets of its
// members' clocks, measured NTP fashion over /weft/clock/1, the
// correction they give (their median, this device counting as 0), and
// the hybrid logical clock step that keeps entry times ordered. It knows
// nothing of vaults or the network: the agent opens the stream and hands
// over its wire.Conn.
//
// Two things must not follow a device's raw clock: which of two
// concurrent versions keeps the name (protocol.WinnerOrder orders by the
// entries' Time) and what `restore --at` means. So the Time a device
// writes into an entry is a hybrid logical clock:
//
//   - its physical part is this device's wall clock corrected by the
//     median of the offsets measured to the members it talks to (this
//     device counting as offset 0): with one device 48 h slow and one
//     48 h fast, each corrects to the middle; with a third, right, device
//     the median is that device's clock;
//   - it never goes back and is above every time seen in the vault's
//     entries, so an edit made after its author saw another entry is
//     later than that entry, whatever the clocks;
//   - except that a time seen more than MaxAhead past the corrected clock
//     is a skewed device's and is not followed: following it would let
//     that one clock date every later entry of the vault.
//
// Offsets are measured over /weft/clock/1 (wire.ClockProbe): the opener
// stamps a probe, the answerer stamps its arrival and its reply, the
// opener stamps the reply's arrival; the estimate is wrong by at most
// half the round trip, and neither side's sync work is inside the
// measured interval.
package clock
