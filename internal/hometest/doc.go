// Package hometest makes weft homes for tests of whole devices: two homes
// already members of one vault (PairHomes), and a log writer for failure
// reports (SyncLog). It imports no node: node's own tests use it, and pass
// enrol.InitVault in.
package hometest
