// Package content produces a file version's plaintext in order from its
// chunk list: each chunk from where this device already holds it, or
// fetched from peers, a window at a time, with the next window gathered
// while the current one is written and fetched chunks opened on every
// core, in pooled buffers. Where chunks come from is a Sources the agent
// gives it (its folder, its version store, its peers), so the pipeline is
// tested without a network or a disk.
package content
