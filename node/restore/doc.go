// Package restore carries out `weft restore` on a device: it checks a
// plan of node/history against the folder and the network before
// anything is written, fetches the content no local store holds, writes
// the old versions through the folder's applier and has them recorded as
// new versions (docs/history.md).
//
// The rules (which version was current at a time, what a restore changes
// and in which order, where content can come from) are node/history's,
// pure. This package is the IO around them, over a Vault interface the
// agent implements for each of its vaults, so it knows nothing of the
// agent's locks, logs or peers, and is tested with a fake vault.
package restore
