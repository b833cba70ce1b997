// Package detsim is the deterministic tier of weft's simulation: many
// simulated devices, each running the sync engine's rules
// (protocol/engine, protocol.Resolve, protocol.MergeFile) over its own
// version graph, log, folder index and in-memory disk, driven by one seeded
// scheduler on a virtual clock. There are no goroutines, sockets, real
// clocks or map-order dependence, so a seed is a complete description of a
// run: the same seed gives the same trace, byte for byte, and its digest
// says so. A failing seed replays exactly (weft sim engine --seed S
// --trace), which the node-level simulation (package simulation, real
// nodes over mocknet) cannot promise.
//
// What it models: users editing, reverting and deleting text files,
// including conflict copies; scans that lag behind the disk; entries
// delivered between devices in partial, per-author prefixes (so versions
// arrive before the history they supersede); devices that go offline;
// clocks skewed by hours; a folder index that is lost and rebuilt from the
// disk; saves that race an apply (an editor saving its edit of the content
// an apply just replaced, before the scan sees the apply: each device keeps
// an engine.RecentApplies and consults it where node does); and the
// mass-delete guard (each device keeps an engine.DeleteGuard, fed as node
// feeds it: scans through JudgeLocal, watched scans deferring deletions,
// reconcile passes through Release and JudgeIncoming), with users deleting
// many files at once and later accepting or rejecting what the guard holds.
// What it leaves to the node-level tier and the end-to-end tests: chunk
// transfer (content is addressed and available once recorded),
// directories, symlinks, encryption, membership and the wire.
//
// After the schedule, every device comes online and the devices exchange
// everything and reconcile until nothing changes (bounded); the users
// decide every deletion still held (seeded). The checks: every device's
// disk is identical; every disk holds what its graph decides; no user's
// write is lost: its content is on a disk, or a later user action or a
// merge knowingly replaced it; no deletion is held at the end; a rejected
// local hold brought its files back; and a deletion a user accepted is
// held by no other device and not undone (see check.go).
package detsim
