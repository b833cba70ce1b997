// Package observe keeps what the agent reports beyond its vaults' own
// state: what the last scans of each folder could not take (ScanNotes:
// paths skipped and why, files found changing, the watcher's rescans and
// failure), and each peer's throughput over the last minute (Rates).
// Status, doctor and the metrics read them; the agent's hooks write them.
// Each has its own lock and takes the time as an argument.
package observe
