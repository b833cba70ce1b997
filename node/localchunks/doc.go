// Package localchunks re-creates the chunks a device holds of a vault
// without asking a peer. A device stores no second copy of its folder's
// content: a chunk of a file in the folder is read back from the file
// where the folder index says it lies (Files), checked against what the
// index recorded (the file's stat, then the chunk's identity or CID) and
// sealed again; a chunk of an older version comes from the local version
// store (node/keeper); a chunk-list piece from the database. Serving a
// peer, restoring, merging and the applier's copies of unchanged chunks
// all read through Source.
package localchunks
