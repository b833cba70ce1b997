// Package graphsnap keeps, beside a vault's logs, a snapshot of what a
// device derived from them: every version held (its metadata and chunk
// list, never inline bytes) with the clocks of the entry that carried it,
// and how far into each author's log the snapshot reaches.
//
// Why: at 100,000 small files the logs are about 110 MB, and rebuilding the
// version graph from them at every start read, decrypted and decoded all
// of it (over a second of CPU, issue 16's B10). A snapshot written when the
// agent stops cleanly lets the next start load the graph and replay only
// the entries after it. The logs stay the source of truth: a snapshot that
// is missing, damaged, of another format, or that names an entry the logs
// no longer hold is ignored and the whole log is replayed as before. So a
// snapshot can only ever save time, never change what a device holds.
//
// The format is this package's own, versioned by its first bytes and
// checked by a CRC-32C trailer (it is local state on the device's own disk,
// next to an index that holds the same paths in the clear; the CRC catches
// damage, not an attacker who can already write the home directory).
// Decode bounds every length by the bytes present, so a damaged file fails
// with an error and never allocates more than it holds. Writes go to a
// temporary file that is synced and renamed over the old snapshot.
package graphsnap
