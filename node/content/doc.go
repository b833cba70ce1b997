// Package content produces a file version's plaintext in order from its
// chunk list: each chunk from where this device already holds it, or
// fetched from peers, several windows at once (so a link with a round trip
// stays busy and the opening of fetched chunks uses every core), written
// in order, in pooled buffers. Where chunks come from is a Sources the agent
// gives it (its folder, its version store, its peers), so the pipeline is
// tested without a network or a disk.
package content
