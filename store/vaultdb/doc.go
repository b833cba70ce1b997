// Package vaultdb is a device's durable state for one vault: the signed
// logs of every author, the membership records, and the derived state the
// node keeps beside them (where each entry lives, each author's head, the
// local folder index, what peers acknowledged, small metadata).
//
// # Source of truth and derived state
//
// The signed logs and the membership records are the source of truth. They
// live in append-only files that this package frames and checksums itself
// (log/NNNNNNNNNN.seg and member/members.log), never in goleveldb, because
// goleveldb drops a corrupt journal tail silently. Entries verify themselves:
// at Open every entry read back is validated again with entry.ValidateStored
// (entry.Validate less the canonical re-encode, which the bytes passed
// before Append wrote them: signature and chain are checked) against its
// author's previous head, and every membership record is folded
// through member.State.Apply; what fails is dropped and counted in the
// OpenReport. A dropped entry shows up as a sequence gap that the node fills
// again from peers.
//
// The signature check is skipped inside the log prefix that this device
// already verified (at Append or an earlier Open) and that the log
// checkpoint (checkpoint.go, DIR/log.checkpoint) proves unchanged since;
// the chain is checked there too. OpenReport.Trusted counts those entries.
//
// goleveldb (under index/, opened with every strict check) holds only what
// can be derived again: entry locations, CID -> (author, seq), heads, the
// folder index, acknowledged vectors and metadata. When it is missing,
// fails to open, fails a checksum while Open reads it through, or disagrees
// with the logs, it is moved aside and rebuilt from the logs; the folder
// index, acks and metadata are then empty and OpenReport.NeedRescan tells
// the node to rehash the folder. No user file is ever touched.
//
// # Order of writes
//
// Append writes the entries to the current segment, fsyncs it (one fsync
// shared by every concurrent caller: group commit), and only then writes
// the index changes, together with the caller's optional Update, in one
// goleveldb batch with Sync set. A caller is answered after both. A crash
// before the segment fsync loses only unanswered entries (a torn tail is
// truncated at Open); a crash between the fsync and the index batch leaves
// durable entries the index does not know, which Open indexes again and
// reports (Reindexed, NeedRescan: the Update that went with them is redone
// by the rescan). docs/storage-vault.md has the byte layouts and the full
// argument.
//
// A DB is safe for concurrent use.
package vaultdb
