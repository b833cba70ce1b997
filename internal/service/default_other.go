//go:build !linux && !darwin && !windows

package service

// Default fails: this OS has no service manager weft knows.
func Default() (Installer, error) { return nil, ErrUnsupported }
