// Package folderguard keeps a vault from treating a missing folder as an
// empty one (docs/folder.md, "The folder marker").
//
// A folder is scanned and written only while its root is the folder the
// vault syncs. Its marker (folder.MarkerPath) names the vault; a folder
// whose marker is gone, names another vault, or that cannot be read is
// stopped before anything is scanned or applied, and resumes by itself
// once it is back. Without it, an unmounted drive or a moved folder looked
// like a user who deleted every file, and the deletions reached every
// device.
//
// Check decides from the folder and what the vault knows of it (a
// Folder); Guard keeps the outcome, with a lock of its own, and says what
// changed so the vault logs and announces it once.
package folderguard
