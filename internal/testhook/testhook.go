package testhook

import "sync/atomic"

// KeepLocalOnConflict, when set, replaces the conflict rules with a
// broken one: a device that already holds one of a path's concurrent
// versions keeps it, writes no conflict copy and records no resolution.
// Which version a device keeps then depends on the order it saw them in,
// so devices end with different trees; the simulation's convergence check
// must catch that (simulation TestBrokenMergeRuleCaught).
var KeepLocalOnConflict atomic.Bool
