package service

import (
	"fmt"
	"os"
	"path/filepath"
)

// Default is the installer for this system: launchd agents of the user.
func Default() (Installer, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("finding the LaunchAgents directory: %w", err)
	}
	return Launchd{
		Dir:    filepath.Join(h, "Library", "LaunchAgents"),
		LogDir: filepath.Join(h, "Library", "Logs", "weft"),
		UID:    os.Getuid(),
	}, nil
}
