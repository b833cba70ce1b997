// Package reconcile runs a vault's reconcile passes: it waits for a kick
// (or a tick while something is dirty), asks the engine's loop
// (node/engineloop) for the pass, decides each path with the vault's
// state under its lock, and carries the decisions out, small files in
// batches that share their fsyncs and the rest one at a time through
// node/carry, recording in the engine what was settled, what failed and
// what only waits. The vault's state, locks, log and folder stay behind
// the Vault interface, so a pass is tested on a MemFS without a device.
package reconcile
