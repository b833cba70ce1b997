package bench

import (
	"fmt"
	"path/filepath"
)

// profileArgs returns the flags that make one launch of proc (a device's
// name, or "relay") write a CPU profile into Config.ProfileDir, or none
// when no directory is set. Each launch gets its own file,
// SCENARIO-runN-PROC-K.pprof (run "fsync" for the strace pass), so a
// restarted agent keeps its first profile. The profile covers the whole
// process life and is written when the process stops on SIGTERM; a
// SIGKILLed process leaves an empty or partial file.
func (rc *runCtx) profileArgs(proc string) []string {
	if rc.cfg.ProfileDir == "" {
		return nil
	}
	rc.launches++
	run := fmt.Sprintf("run%d", rc.run+1)
	if rc.run < 0 {
		run = "fsync"
	}
	name := fmt.Sprintf("%s-%s-%s-%d.pprof", rc.id, run, proc, rc.launches)
	return []string{"--cpuprofile", filepath.Join(rc.cfg.ProfileDir, name)}
}
