// Package simulation runs many real weft devices in one process over an
// in-memory network with faults, from a seed, and checks that they
// converge with nothing lost.
//
// What is real: every device is a node.Node, the code `weft up` runs, with
// its vault database (store/vaultdb, on disk in a temporary home), its
// sync core, its log, chunk and pairing protocols and its applier. What is
// simulated: the libp2p host (go-libp2p's p2p/net/mock, see Network), the
// synced folder (folder.MemFS, one per device, surviving restarts like a
// disk) and the user (a Schedule of writes, deletes, renames, concurrent
// edits, partitions, restarts, joins and leaves, generated from a seed).
//
// A run (Run) executes a schedule step by step, then heals every fault,
// lets the devices settle and checks (Check): every device's tree is
// identical, every acknowledged write is present or was superseded by a
// later user operation that saw it, every write was observed by every
// other device, every file's bytes hash to what was written, no applier
// temporary file is left in any folder, and no conflict copy is a copy of
// a copy or repeats another copy of the same path's content. The
// schedule is a pure function of the seed; the interleaving of the
// devices' goroutines is not, so a replay (Config.Until) re-runs the same
// operations, not the same thread schedule. docs/simulation.md has the
// definitions and recorded results.
package simulation
