//go:build windows

package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// Default is the installer for this system: the Windows service control
// manager.
func Default() (Installer, error) { return Windows{}, nil }

// Windows installs Windows services through the service control manager,
// which needs an elevated (administrator) prompt. The service runs as
// LocalSystem, starts automatically (delayed) at boot, and is restarted
// 5 s after it fails.
type Windows struct{}

// WindowsLogPath is where a service started by the service control
// manager writes its standard output and error: Windows has no journal
// for them. %ProgramData%\weft\logs\NAME.log.
func WindowsLogPath(name string) string {
	pd := os.Getenv("ProgramData")
	if pd == "" {
		pd = `C:\ProgramData`
	}
	return filepath.Join(pd, "weft", "logs", name+".log")
}

func connect() (*mgr.Mgr, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, fmt.Errorf("connecting to the service control manager (run this from an elevated prompt, \"Run as administrator\"): %w", err)
	}
	return m, nil
}

func commandLine(exe string, args []string) string {
	s := syscall.EscapeArg(exe)
	for _, a := range args {
		s += " " + syscall.EscapeArg(a)
	}
	return s
}

// Install creates the service, or updates one of the same name, sets its
// recovery actions and, if start is set, (re)starts it.
func (Windows) Install(s Spec, start bool) (Installed, error) {
	m, err := connect()
	if err != nil {
		return Installed{}, err
	}
	defer m.Disconnect()
	ws, err := m.OpenService(s.Name)
	replaced := err == nil
	if replaced {
		cfg, err := ws.Config()
		if err != nil {
			ws.Close()
			return Installed{}, fmt.Errorf("reading service %s: %w", s.Name, err)
		}
		cfg.BinaryPathName = commandLine(s.Exe, s.Args)
		cfg.DisplayName, cfg.Description = s.Name, s.Description
		cfg.StartType, cfg.DelayedAutoStart = mgr.StartAutomatic, true
		if err := ws.UpdateConfig(cfg); err != nil {
			ws.Close()
			return Installed{}, fmt.Errorf("updating service %s: %w", s.Name, err)
		}
	} else {
		cfg := mgr.Config{DisplayName: s.Name, Description: s.Description, StartType: mgr.StartAutomatic, DelayedAutoStart: true}
		ws, err = m.CreateService(s.Name, s.Exe, cfg, s.Args...)
		if err != nil {
			return Installed{}, fmt.Errorf("creating service %s: %w", s.Name, err)
		}
	}
	defer ws.Close()
	restart := []mgr.RecoveryAction{
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
	}
	if err := ws.SetRecoveryActions(restart, 24*60*60); err != nil {
		return Installed{}, fmt.Errorf("setting the recovery actions of %s: %w", s.Name, err)
	}
	// A failed `weft up` exits with an error code rather than crashing:
	// that must count as a failure too.
	if err := ws.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return Installed{}, fmt.Errorf("setting the recovery actions of %s: %w", s.Name, err)
	}
	in := Installed{Notes: []string{"logs: " + WindowsLogPath(s.Name)}}
	if !start {
		in.Notes = append([]string{"not started; start it with: sc.exe start " + s.Name}, in.Notes...)
		return in, nil
	}
	if replaced {
		if err := stopAndWait(ws); err != nil {
			return in, fmt.Errorf("%w\nrestart it by hand with: sc.exe stop %s, then sc.exe start %s", err, s.Name, s.Name)
		}
	}
	if err := ws.Start(); err != nil {
		return in, fmt.Errorf("starting service %s: %w\nstart it by hand with: sc.exe start %s", s.Name, err, s.Name)
	}
	in.Started = true
	return in, nil
}

// stopAndWait stops a running service and waits up to 30 s for it to
// stop. The service control manager has no simple event for that, so its
// state is polled.
func stopAndWait(ws *mgr.Service) error {
	st, err := ws.Query()
	if err != nil {
		return fmt.Errorf("querying service %s: %w", ws.Name, err)
	}
	if st.State == svc.Stopped {
		return nil
	}
	if _, err := ws.Control(svc.Stop); err != nil {
		return fmt.Errorf("stopping service %s: %w", ws.Name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := ws.Query()
		if err != nil {
			return fmt.Errorf("querying service %s: %w", ws.Name, err)
		}
		if st.State == svc.Stopped {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("service %s did not stop within 30 s", ws.Name)
}

// Uninstall stops and deletes the service. One that does not exist is
// not an error.
func (Windows) Uninstall(name string) (Removed, error) {
	m, err := connect()
	if err != nil {
		return Removed{}, err
	}
	defer m.Disconnect()
	ws, err := m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return Removed{}, nil
	}
	if err != nil {
		return Removed{}, fmt.Errorf("opening service %s: %w", name, err)
	}
	defer ws.Close()
	if err := stopAndWait(ws); err != nil {
		return Removed{}, fmt.Errorf("%w\nstop and remove it by hand with: sc.exe stop %s, then sc.exe delete %s", err, name, name)
	}
	if err := ws.Delete(); err != nil {
		return Removed{}, fmt.Errorf("deleting service %s: %w\nremove it by hand with: sc.exe delete %s", name, err, name)
	}
	return Removed{Removed: true}, nil
}

// Status reports whether the service exists and its state.
func (Windows) Status(name string) (Status, error) {
	st := Status{Name: name, Manager: "windows"}
	m, err := connect()
	if err != nil {
		st.State, st.Error = "unknown", err.Error()
		return st, nil
	}
	defer m.Disconnect()
	ws, err := m.OpenService(name)
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("opening service %s: %w", name, err)
	}
	defer ws.Close()
	st.Installed = true
	q, err := ws.Query()
	if err != nil {
		st.State, st.Error = "unknown", err.Error()
		return st, nil
	}
	st.State = stateName(q.State)
	return st, nil
}

func stateName(s svc.State) string {
	switch s {
	case svc.Stopped:
		return "stopped"
	case svc.StartPending:
		return "start pending"
	case svc.StopPending:
		return "stop pending"
	case svc.Running:
		return "running"
	case svc.ContinuePending:
		return "continue pending"
	case svc.PausePending:
		return "pause pending"
	case svc.Paused:
		return "paused"
	}
	return fmt.Sprintf("state %d", s)
}

// Run runs run(ctx). When the process was started by the service control
// manager it runs it under svc.Run instead: standard output and error go
// to WindowsLogPath(logName), and Stop or Shutdown cancels run's context;
// a run that fails reports a service-specific exit code 1, which the
// recovery actions Install set answer with a restart.
func Run(ctx context.Context, logName string, run func(context.Context) error) error {
	is, err := svc.IsWindowsService()
	if err != nil || !is {
		return run(ctx)
	}
	redirectOutput(WindowsLogPath(logName))
	h := &handler{ctx: ctx, run: run}
	if err := svc.Run(logName, h); err != nil {
		return fmt.Errorf("running as a Windows service: %w", err)
	}
	return h.err
}

// redirectOutput points standard output and error, Go's and the
// process's (for a panic's trace), at the log file. A service has no
// console; when the log cannot be opened the output is lost, as before.
func redirectOutput(path string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	os.Stdout, os.Stderr = f, f
	_ = windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, windows.Handle(f.Fd()))
	_ = windows.SetStdHandle(windows.STD_ERROR_HANDLE, windows.Handle(f.Fd()))
}

// handler answers the service control manager while run runs.
type handler struct {
	ctx context.Context
	run func(context.Context) error
	err error // run's result, set before Execute returns
}

func (h *handler) Execute(_ []string, r <-chan svc.ChangeRequest, s chan<- svc.Status) (bool, uint32) {
	s <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	const accepts = svc.AcceptStop | svc.AcceptShutdown
	s <- svc.Status{State: svc.Running, Accepts: accepts}
	stopping := false
	for {
		select {
		case err := <-done:
			h.err = err
			if err != nil && !stopping {
				fmt.Fprintln(os.Stderr, "weft:", strings.TrimSpace(err.Error()))
				return true, 1
			}
			return false, 0
		case c := <-r:
			switch c.Cmd {
			case svc.Interrogate:
				s <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				if !stopping {
					stopping = true
					s <- svc.Status{State: svc.StopPending, WaitHint: 30000}
					cancel()
				}
			}
		}
	}
}
