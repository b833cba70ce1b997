// Package homefull tracks a full disk under weft's home. The vault's database (its logs and folder
// index) and version store live in the home, often on another disk than the
// folder. When that disk fills, nothing new can be recorded (local edits)
// or received (peers' entries): before, a peer's entry that failed to be
// stored was reported as "refused an invalid entry from a peer", blaming
// the honest peer, and status said in-sync while a first sync had stopped
// at 1,528 of 4,000 files. Now the failure is the folder's error
// home-disk-full (status state error, doctor problem, event and metric),
// logged once with the home's path and free space, and weft retries by
// itself: pullers retry their streams, and once a probe write in the home
// succeeds the folder is rescanned and applies resume (they wait while the
// home is full: each would fail to record its index entry). Nothing is lost meanwhile: a peer's
// entry that was not stored is asked for again, and a local edit that was
// not recorded is still on disk, found by the rescan.
//
// This package holds the fault, the probe for room and the test for a
// full-disk error; the vault logs, publishes and retries around them.
package homefull
