// Package scrub finds rot on a device (docs/folder.md, "Rot"): it
// re-reads, slice by slice, the files whose size, mtime, inode and ctime
// still match what the vault recorded, and hands the ones whose content
// no longer matches to the vault to be moved aside and written again.
//
// A background loop re-verifies every file once per Period, a slice each
// Tick; `weft scrub` runs a whole pass at once (Now). The version store's
// share of the week is scrubbed beside the folder's.
//
// The vault is an interface: the index, the folder guard, the log and
// quarantining a damaged file stay the agent's, so this package holds the
// pacing and the verdict alone and is tested with a fake vault over a real
// folder.
package scrub
