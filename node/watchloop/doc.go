// Package watchloop decides when a vault's folder is scanned while the
// agent runs: a file watcher's settled paths, its asks for a full rescan,
// a full rescan every so often, the folder guard's rechecks of a stopped
// folder (and a full scan and a new watcher once it is back), the
// rescans that stand in for what the watcher cannot watch, a home disk
// with room again, and deletions the mass-delete guard deferred. At a
// start it runs the first scan once the watcher's watches can be added,
// so one walk serves both. What a scan records, and everything else of
// the vault, stays behind the Vault interface.
package watchloop
