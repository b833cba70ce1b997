// Package carry carries one path's decision out on the folder, in the
// order that keeps every version: the conflict copies first, while the
// file at the path still holds whatever they may need; then the winner, or
// the clean merge of the heads; then the record of what was written (the
// folder index alone, or one entry recording the resolution with the
// index). Scans are held off from the stamp check to the record, so the
// watcher never takes these writes for local edits and a local edit
// recorded after the decision makes it stale instead of being overwritten.
//
// What to do comes from the engine (protocol/engine) through the vault;
// the vault's state, locks, log and version store stay behind the Vault
// interface. This package holds the order of the writes and what each
// writes, nothing else.
package carry
