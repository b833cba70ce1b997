// Package memindex is a vault's folder index in memory: the record of
// every path the device holds in its folder (what a scan found, what an
// apply wrote), with what is derived from the records kept beside them as
// they change: the counts status reports (files, directories, bytes,
// conflict copies present) and each directory's indexed children, so a
// status call or a scan of one directory costs what it reports, not a walk
// of every record. It does no IO and holds no lock: the vault keeps one
// under its own lock, and loads it from the store at open.
package memindex
