//go:build !windows

package service

import "context"

// Run runs run(ctx). Only on Windows can a process have been started by a
// service manager that must be answered (windows.go); systemd and launchd
// stop a service with SIGTERM, which the caller's ctx already handles.
// logName is used only on Windows.
func Run(ctx context.Context, logName string, run func(context.Context) error) error {
	return run(ctx)
}
