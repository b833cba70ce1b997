// Package punchtest holds the tests of whole nodes behind simulated NATs:
// hole punching between two devices and relay reservations kept over hours,
// on simnet's in-memory QUIC under testing/synctest, so that minutes of
// virtual time take milliseconds.
//
// They live in a package of their own, and so in a test binary of their
// own, because a synctest bubble must share nothing with goroutines outside
// it: a node seals chunks with zstd encoders from a process-wide pool, and
// an encoder first used inside a bubble carries a channel of that bubble;
// another test of the same binary that later took it from the pool would
// crash with "receive on synctest channel from outside bubble" (seen with
// node's hostile-relay test). The same holds inside this package: a test
// here that ran outside a bubble and sealed or opened a chunk after
// TestHolePunchedSync would meet that encoder; every test here runs its
// nodes inside a bubble of its own.
package punchtest
