//go:build !linux && !darwin

package node

// diskSpace is unknown on this system.
func diskSpace(string) (free, total int64) { return 0, 0 }
