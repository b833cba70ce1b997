// Package engine holds the vault's sync decisions around the conflict
// rules: what a local change supersedes, which head a rebuilt index adopts,
// what a conflict copy supersedes, the order in which a batch of decided
// paths is carried out, how long a path with missing history waits, in
// which order a batch of versions is authored, and which deletions the
// mass-delete guard holds for the user (DeleteGuard, the one rule here that
// keeps state: a value of the Engine, fed with scans,
// reconcile passes and the user's decisions, with the time passed in), and
// what a node may report as held (Policy.Held: one rule, which a device and
// a relay run with their own Policy). protocol.Resolve decides one
// path's concurrent heads; this package decides everything a device does
// with that decision that is not IO.
//
// Everything here is a pure function of a protocol.Graph, the engine's view
// of the folder index (Disk) and explicit inputs such as the time: no
// locks, no goroutines, no disk or network. node/ calls these functions
// from the vault's engine loop or under its own locks (one implementation
// of each rule), and the
// deterministic simulation (simulation/detsim) runs the same functions over
// many simulated devices with a virtual clock and a seeded scheduler, so a
// failing seed replays exactly.
//
// Engine is the vault's reconcile state machine, shaped like etcd raft's
// (Step, Tick, Ready, Advance): the dirty paths, their waits for history,
// the errors of paths not settled, the pending count, the mass-delete
// guard and the recent applies, one value per vault that node and the
// simulation both drive. It reads the graph and the folder index through
// a View; the shell keeps those and does the IO.
//
// Rules are the decision functions a device runs, as a value: Default() is
// the product's; a test may hand a device (or the simulation) a deliberately
// broken one to show that the checks catch it, without a global switch in
// the product.
package engine
