// Package folder is the IO edge between one synced folder on disk and the
// rest of a device: it walks the folder and reports what changed (Scanner),
// watches it for edits (node/folder/watch), and writes versions that arrived from
// peers (Applier), durably and without ever overwriting a local edit.
//
// The package knows nothing about entries, chunks, encryption or the
// network. What it needs from outside comes in through small interfaces:
// Index (what the caller last recorded for a path), Hasher (how a file's
// content is summarised: the node plugs in chunking and sealing), Clock
// (time for the watcher's settle delay) and FS (the disk itself, with an
// OS implementation rooted at the folder and an in-memory one that models
// fsync and crashes for tests and the simulation).
//
// Paths are always relative to the folder root, slash-separated, and on the
// wire in Unicode NFC. ValidPath is the gate for every path that came from
// a peer; the FS implementations refuse any path that is absolute, climbs
// out of the root or crosses a symlinked parent directory, whatever the
// caller checked before.
//
// The rules (what is scanned, how changes are detected, the applier's
// durability sequence, conflicts from local changes, ignore rules, case and
// Unicode rules, what is never synced) are written out in docs/folder.md.
package folder
