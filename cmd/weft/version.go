package main

import (
	"runtime"
	"runtime/debug"
)

// Set by the linker for builds from this repository (make build, make
// cross, goreleaser: -ldflags "-X main.version=... -X main.commit=...
// -X main.date=... -X main.modified=true|false"). A plain `go build` or
// `go install` leaves them as they are here, and buildVersion fills them
// from what the Go toolchain records instead.
var (
	version  = "dev"
	commit   = "unknown"
	date     = "unknown"
	modified = ""
)

// versionInfo is what `weft version --json` prints.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`   // full hash of the commit built, or "unknown"
	Date     string `json:"date"`     // that commit's time (RFC 3339), or "unknown"
	Modified bool   `json:"modified"` // built from a tree with uncommitted changes
	Go       string `json:"go"`
}

// buildVersion reports what the linker stamped, and for whatever it did
// not, what the Go toolchain recorded: `go build` in a git checkout stamps
// vcs.revision, vcs.time and vcs.modified (unless -buildvcs=false), and
// `go install module@v1.2.3` records the module version. A binary built
// from a tarball with plain `go build` says "dev" and "unknown": nothing
// knows better.
func buildVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(bi, version, commit, date, modified)
}

// versionFrom is buildVersion over explicit inputs, so that tests can give
// it the build info of each kind of build.
func versionFrom(bi *debug.BuildInfo, ver, com, dt, mod string) versionInfo {
	v := versionInfo{Version: ver, Commit: com, Date: dt, Modified: mod == "true", Go: runtime.Version()}
	if bi == nil {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if v.Commit == "unknown" || v.Commit == "" {
				v.Commit = s.Value
			}
		case "vcs.time":
			if v.Date == "unknown" || v.Date == "" {
				v.Date = s.Value
			}
		case "vcs.modified":
			if mod == "" {
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	return v
}
