// Package protocol is weft's sync core: the pure rules that decide what a
// peer lacks, which versions of a path are current, and how concurrent
// versions are resolved. Its subpackages hold what crosses the wire and what
// gets signed (keys, entry, chunk, wire); this package holds the decisions.
//
// Everything here is a function of its inputs: no goroutines, no clocks, no
// IO, no logging, no randomness. node/ feeds it versions and carries out its
// decisions; simulation/ runs the same code on hundreds of simulated
// devices. Every device that holds the same versions reaches the same
// decision, whatever order it learned them in.
//
// # Pieces
//
//   - Vector (vector.go): a version vector, author -> highest contiguous
//     sequence held. Compare relates two vectors; Missing says which ranges
//     of which logs a peer lacks, which is what the log protocol sends.
//   - Version and VersionID (version.go): the core's view of one file
//     version, independent of the entry encoding (protocol/entry aliases
//     VersionID and Kind, so there is one vocabulary); node/ builds a
//     Version from the decrypted body.
//   - Graph (heads.go): the version graph. Add versions in any order; ask
//     for a path's heads, whether one version descends from another, and
//     the nearest common ancestor of several.
//   - Resolve (resolve.go): the conflict rules of ARCHITECTURE.md,
//     "Conflicts", for one path's heads, returning a Decision: the winner,
//     a three-way merge plan, conflict copies and their names (ConflictName).
//   - Merge3 and MergeAll (textmerge.go, diff.go): a deterministic line-level
//     three-way merge with bounded work.
//   - MergeFile (mergedriver.go): the merge drivers by file type: JSON and
//     JSON Canvas by key and id (jsonmerge.go), Markdown frontmatter by key
//     with the body by lines (frontmatter.go), over one keyed three-way
//     merge (keyedmerge.go); lines for everything else.
//
// # Ordering obligations on node/
//
//   - A version's Clock is its entry's Lamport clock, which is greater than
//     the clock of every entry its author had seen; so a version's Clock is
//     greater than that of every version it supersedes. Graph ignores edges
//     that break this.
//   - Text must be a function of the content (IsText), so every device sets
//     it alike.
//   - Act on a Decision only when Graph.Dangling(path) is empty, or accept
//     that it is provisional: an unknown superseded version can still link
//     two heads.
//   - Record the outcome of a decision in one entry: a version at the path
//     that supersedes Decision.Superseded (the winner's content, or the
//     merged text), and a new version at each conflict copy's path. Two
//     devices that resolve the same conflict concurrently write the same
//     contents at the same names, which the identical-content rule then
//     settles without a further conflict.
//
// The rules in prose, with examples, are in docs/protocol/sync-core.md.
package protocol
