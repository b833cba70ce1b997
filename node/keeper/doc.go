// Package keeper keeps local versions (docs/history.md, "Local
// versions"): every device keeps the content of the file versions it
// holds in a version store in its home (store/versions), so that what the
// user or a peer replaces or deletes can be restored with no relay and no
// other device online.
//
// What is kept, and when:
//   - a version that becomes current here (recorded from a local edit, or
//     applied from a peer) is queued (Enqueue), and the keep loop (Run)
//     copies its chunks from the folder into the store, unless the store
//     is over budget and the version replaced nothing (the first scan or
//     first sync of a large folder does not copy the whole folder);
//   - before the agent replaces or deletes a file (a peer's version, a
//     resolution, a deletion), the version on disk is copied first if the
//     store lacks it, synchronously (KeepNow): what sync takes away is
//     always kept;
//   - a merge this device writes is copied from the merged bytes in memory,
//     synchronously and whatever the budget (KeepSole): until a peer has
//     fetched it, it exists nowhere else, and an editor's save landing
//     right after the write replaces it on disk while the merge stays a
//     version other devices need.
//
// Inline versions (4 KiB or less) are in the log itself and need no copy.
// A version larger than a quarter of the budget is not kept (one large
// file would push every other version out); history then says where its
// content is, truthfully. Keeping never blocks sync: a failure (a full
// disk) is logged and counted, and the version is simply not kept.
//
// The keeper reads what it needs of the vault through a Vault (a
// version's body, the folder's size, a chunk re-created from the folder,
// a fetch from peers), so it is tested without a node or a network.
package keeper
