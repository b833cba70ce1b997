// Package history holds the rules of file history and point-in-time
// restore (docs/history.md), pure over what the vault gathers under its
// lock: which versions of a path exist, which was current at a time, what
// `weft history` lists of each, where a version's content can come from,
// and what a restore must change. node gathers the facts (the version
// graph, the folder index, entry times from the log, which chunks it
// holds) and carries a plan out (fetching, writing, recording); the
// decisions live here and are tested without a disk, a network or a
// database.
//
// A path's history is per name: a rename is a deletion at the old path and
// a new version at the new one, with no link between them in the log.
package history
