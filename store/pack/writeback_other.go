//go:build !linux

package pack

// startWriteback is a no-op where sync_file_range does not exist; the
// fsync of each group commit still does all the writing.
func startWriteback(f File, off, n int64) {}
