// Package testhook holds switches that only tests flip. Each one breaks a
// rule of the sync core on purpose, so that a test can show that the
// checks meant to catch such a bug actually do (a check that never fails
// proves nothing). Production code never sets them; they live in an
// internal package so that no program outside this module can either.
package testhook

import "sync/atomic"

// KeepLocalOnConflict, when set, replaces the conflict rules with a
// broken one: a device that already holds one of a path's concurrent
// versions keeps it, writes no conflict copy and records no resolution.
// Which version a device keeps then depends on the order it saw them in,
// so devices end with different trees; the simulation's convergence check
// must catch that (simulation TestBrokenMergeRuleCaught).
var KeepLocalOnConflict atomic.Bool
