// Package logview keeps what a vault derives from its log in memory: the
// version graph, each version's body (inline bytes kept apart in a small
// cache), the highest clocks seen, how far each author's log is folded in
// and how far it is held whole, what each author sent itself, and the
// entries held back until their author's earlier ones arrive.
//
// A View has no lock and does no IO: the vault's mutex guards it (the
// inline cache has a lock of its own, as the applier reads it without the
// vault's), and the vault reads and checks entries before it hands them
// in. That keeps the rules of folding, of the held prefix and of the
// entries held back testable with no log, no folder and no network.
package logview
