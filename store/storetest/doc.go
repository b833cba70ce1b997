// Package storetest is the one conformance suite every chunkstore.Store
// passes, in the manner of restic's backend tests: Run is called by each
// store's own tests with a Backend that opens that store over a fresh
// storage and lets the suite reach the stored data units (pack files,
// objects) directly, to damage them the way a disk, a bucket or a crash
// would.
package storetest
