package main

import (
	"runtime"
	"runtime/debug"
)

// versionInfo is what `weft version --json` prints.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// buildVersion reports the version and commit stamped by the linker
// (make build), falling back to what the Go toolchain records from the
// version control system (go build in a git checkout stamps vcs.revision).
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "unknown" {
					v.Commit = s.Value
					if len(v.Commit) > 12 {
						v.Commit = v.Commit[:12]
					}
				}
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return v
}
