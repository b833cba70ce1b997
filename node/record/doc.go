// Package record turns the changes a scan of the folder found into the
// versions this device records, and groups them into entries.
//
// A change becomes a version only when it is one: an mtime that moved
// over the same content and mode, a deletion of what is already deleted,
// and a new file whose content a head at its path already holds record
// nothing, and the index record is kept or adopted instead. What a
// version supersedes is the engine's answer (engine.Engine.LocalChange:
// what the index says was on disk, unless the change races an apply). A
// conflict copy the user moved back onto its file is recorded as the
// copy's deletion in the same entry as the file's change, and the file is
// restated (docs/simulation.md, findings 10 and 13). An entry holds at
// most MaxVersionsPerEntry versions, MaxInlinePerEntry inline bytes and
// MaxRefsPerEntry chunk or piece references, so it stays quick to send and
// fits one wire frame.
//
// The vault's index, graph and engine stay behind the Vault interface;
// this package holds the rules, and is tested without a device.
package record
