// Package damaged keeps what a device knows of its damaged files
// (docs/folder.md, "Rot"): a file whose content no longer matches what was
// recorded while its size, mtime and inode still do was damaged on disk,
// not edited. It is never recorded as a version; it is moved aside into
// .weft/corrupt/ for the user (MoveAside), its index record is dropped,
// and the applier writes the recorded version again. Files remembers each
// until it is written again, for status's errors[].
//
// It works over a folder.FS and has a lock of its own (a leaf: the vault
// may hold its own lock when it calls Repaired), so it is tested without a
// node.
package damaged
