package vaultdb

// OpenReport says what Open found and did. Open returns it with a nil error
// whenever the DB is usable, even after damage; a caller logs it and acts
// on NeedRescan.
type OpenReport struct {
	// Records is the number of log records read, Entries the number of
	// entries verified and held.
	Records, Entries int
	// Dropped counts records that failed validation (bad encoding,
	// signature, vault or chain) or no longer chain after a gap; Gaps says
	// where each author's log was cut. Duplicates counts records that
	// repeat an entry already held; they are harmless.
	Dropped, Duplicates int
	Gaps                []Gap
	// Trusted counts the entries held without checking their signature
	// again: they lie in the log prefix that the checkpoint says this
	// device verified before, and their bytes match it (their chain is
	// still checked). CheckpointError says why a checkpoint found was not
	// used ("" if none was found or it was used); the log was then
	// verified in full.
	Trusted         int
	CheckpointError string
	// Lost lists, per author, entries the index had recorded that Open no
	// longer holds (Seq the lowest, Dropped how many), whatever the cause:
	// a log tail or segment lost after it was acknowledged (a disk that
	// dropped written data), a damaged range, or entries dropped after a
	// gap (also in Gaps). The index is then rebuilt. They are missing
	// until peers send them again. Lost is filled only from an index that
	// could still be read through; a corrupt index leaves it empty.
	Lost []Gap
	// Truncated lists the bad tail cut off the last segment or the
	// membership log: a write torn by a crash, never acknowledged.
	Truncated []Damage
	// Damage lists bad ranges with valid records after them (see Err).
	Damage []Damage

	// Created is true when the directory held no index and no log: a new
	// vault database.
	Created bool
	// Rebuilt is true when the index was discarded (missing, failing to
	// open, failing a checksum, or disagreeing with the logs) and rebuilt
	// from the logs; RebuildReason says why. The folder index,
	// acknowledged vectors and metadata are then empty.
	Rebuilt       bool
	RebuildReason string
	// Reindexed counts durable entries the index did not know: a crash
	// came between a segment fsync and its index batch.
	Reindexed int
	// NeedRescan is true when the folder index may lag the logs (Created,
	// Rebuilt, or Reindexed > 0): the node must rescan and rehash the
	// folder before trusting the index. No user file was touched.
	NeedRescan bool

	// MemberRecords is the number of membership records held;
	// MemberDropped the number that failed State.Apply and were dropped
	// with everything after them.
	MemberRecords, MemberDropped int
}

// Err returns a *CorruptionError listing Damage, or nil if there is none.
func (r OpenReport) Err() error {
	if len(r.Damage) == 0 {
		return nil
	}
	return &CorruptionError{Ranges: append([]Damage(nil), r.Damage...)}
}
