// Package folderstate decides what a folder's status says: its state
// (in-sync, syncing, held, out-of-sync, scanning, offline, error), the
// error that state names, and the errors[] list, from facts the agent
// gathers about the vault at one moment.
//
// Status is what a user trusts when deciding whether a device may be
// switched off, so the rule that turns faults into a state lives in one
// pure function (Judge): every precedence between faults is tested
// without a device, a disk or a network, and the agent (node) only
// gathers the facts. docs/api.md is the contract the states follow.
package folderstate
