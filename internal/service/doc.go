// Package service installs weft (the agent, `weft up`, or the relay) as a
// service of the operating system's own manager, so that it starts at
// login or boot and is restarted when it fails: a systemd user unit on
// Linux, a launchd agent on macOS, a Windows service.
//
// Why hand-written rather than a library such as
// github.com/kardianos/service: the two Unix unit formats are small, and
// rendering them with pure functions (SystemdUnit, LaunchdPlist) lets
// tests check every byte, and install them into a temporary directory with
// a fake command runner, without a service manager. Windows is done with
// golang.org/x/sys/windows/svc and svc/mgr, already a dependency, so no
// module is added (docs/dependencies.md).
//
// Layout: spec.go (Spec and the pure renderers), systemd.go and launchd.go
// (installers whose directory and command runner are injected; they
// compile on every OS so that their tests run anywhere), windows.go (the
// Windows service manager and running under it), and one default_*.go per
// OS choosing the installer for the running system.
package service
