package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
)

// device is one weft home and folder, with its agent when running.
type device struct {
	bin    string
	name   string
	home   string
	folder string
	log    string

	cmd     *exec.Cmd
	pid     int // the weft process (not strace when launched under it)
	done    chan error
	started time.Time
	api     apiInfo
	http    *http.Client
	strace  *straceRun
	// profile returns extra flags for each launch of the agent (a CPU
	// profile, runCtx.profileArgs).
	profile func() []string
}

// apiInfo is home/api.json as the agent writes it.
type apiInfo struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
}

// newDevice is a device named name with its home and folder under dir,
// run with rc's binary (and CPU profiles, when rc asks for them).
func newDevice(rc *runCtx, dir, name string) *device {
	return &device{
		bin: rc.cfg.Bin, name: name,
		profile: func() []string { return rc.profileArgs(name) },
		home:    filepath.Join(dir, name, "home"),
		folder:  filepath.Join(dir, name, "folder"),
		log:     filepath.Join(dir, name, "agent.log"),
		http:    &http.Client{Timeout: 10 * time.Minute},
	}
}

// run runs a CLI command against this device's home and returns stdout.
func (d *device) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, d.bin, append([]string{"--home", d.home}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: weft %s: %v: %s", d.name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// up starts the agent and waits for its ready line. With fsyncs set, the
// agent runs under `strace -f -c` counting fsync and fdatasync calls.
func (d *device) up(ctx context.Context, fsyncs bool) error {
	if err := os.MkdirAll(filepath.Dir(d.log), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := []string{"--home", d.home, "up", "--listen", "/ip4/127.0.0.1/tcp/0", "--mdns=false"}
	if d.profile != nil {
		args = append(args, d.profile()...)
	}
	name := d.bin
	if fsyncs {
		d.strace = newStraceRun(filepath.Join(filepath.Dir(d.log), fmt.Sprintf("strace-%d.txt", time.Now().UnixNano())))
		args = append(d.strace.launchArgs(), append([]string{d.bin}, args...)...)
		name = straceBin
	}
	cmd := exec.Command(name, args...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	d.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: starting agent: %w", d.name, err)
	}
	d.cmd = cmd
	d.done = make(chan error, 1)
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- struct{}{}
			}
		}
		err := cmd.Wait()
		logf.Close()
		d.done <- err
	}()
	select {
	case <-ready:
	case err := <-d.done:
		d.cmd = nil
		return fmt.Errorf("%s: agent exited before ready: %v\n%s", d.name, err, d.logTail())
	case <-time.After(2 * time.Minute):
		d.kill()
		return fmt.Errorf("%s: agent not ready after 2m\n%s", d.name, d.logTail())
	case <-ctx.Done():
		d.kill()
		return ctx.Err()
	}
	b, err := os.ReadFile(filepath.Join(d.home, "api.json"))
	if err != nil {
		d.kill()
		return fmt.Errorf("%s: reading api.json: %w", d.name, err)
	}
	if err := json.Unmarshal(b, &d.api); err != nil {
		d.kill()
		return fmt.Errorf("%s: api.json: %w", d.name, err)
	}
	d.pid = d.api.PID
	if d.pid == 0 {
		d.pid = cmd.Process.Pid
	}
	return nil
}

// stop ends the agent with SIGTERM and waits for it to exit.
func (d *device) stop() error {
	if d.cmd == nil {
		return nil
	}
	terminate(d.pid)
	var err error
	select {
	case err = <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		killPID(d.pid)
		<-d.done
		err = fmt.Errorf("%s: agent did not stop within 30s of SIGTERM", d.name)
	}
	d.cmd = nil
	return err
}

// kill ends the agent with SIGKILL.
func (d *device) kill() {
	if d.cmd == nil {
		return
	}
	killPID(d.pid)
	_ = d.cmd.Process.Kill()
	<-d.done
	d.cmd = nil
}

func (d *device) logTail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// apiDo calls the agent's local API.
func (d *device) apiDo(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+d.api.Addr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+d.api.Token)
	resp, err := d.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", d.name, method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s %s: %s", d.name, method, path, strings.TrimSpace(string(msg)))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// status is GET /v1/status (what `weft status --json` prints).
func (d *device) status(ctx context.Context) (api.Status, error) {
	var st api.Status
	err := d.apiDo(ctx, http.MethodGet, "/v1/status", &st)
	return st, err
}

// scanResult is one folder's answer to POST /v1/scan (`weft scan --json`).
type scanResult struct {
	Folder  string `json:"folder"`
	Files   int    `json:"files"`
	Changes int    `json:"changes"`
	Millis  int64  `json:"millis"`
}

func (d *device) scan(ctx context.Context) ([]scanResult, error) {
	var res []scanResult
	err := d.apiDo(ctx, http.MethodPost, "/v1/scan", &res)
	return res, err
}

// wire sums the device's per-peer byte counters.
func (d *device) wire(ctx context.Context) (sent, received int64, err error) {
	st, err := d.status(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range st.Peers {
		sent += p.BytesSent
		received += p.BytesReceived
	}
	return sent, received, nil
}

// usage reads the agent's CPU seconds and peak RSS from /proc.
func (d *device) usage() (procUsage, error) {
	if d.cmd == nil {
		return procUsage{}, errors.New(d.name + ": agent not running")
	}
	return readProc(d.pid)
}

// waitState polls the status every poll until check accepts it. The
// status walks the agent's whole folder index under its vault lock
// (node/introspect.go), so each poll costs the agent CPU in proportion to
// the files it holds: a 20 ms poll took 26 % of A's CPU in full-scale B8
// (23,000 files, about 0.1 µs a file per call), and a 5 ms poll held the
// lock most of the time in B10 (100,000 files). The interval is therefore
// stretched to pollPerFile for each file the last status counted, which
// keeps the observer's cost near 5 % of a core.
func (d *device) waitState(ctx context.Context, limit time.Duration, poll time.Duration, check func(api.Status) bool) (api.Status, error) {
	return d.waitStateEvents(ctx, limit, poll, nil, check) // a nil channel never wakes
}

// waitStateEvents is waitState that also asks for the status on each event
// in wake (a scan finished, a reconcile pass, a peer's status), at most
// once per minGap, a burst of events asking once: it sees a state reached
// within an event's delivery rather than within the stretched poll
// interval, which at 100,000 files is 200 ms (B10's in-sync time, issue
// 16's 1 s target), without polling faster. The stretched poll stays as the fallback for a state no event
// announces.
func (d *device) waitStateEvents(ctx context.Context, limit, poll time.Duration, wake <-chan api.Event, check func(api.Status) bool) (api.Status, error) {
	const minGap = 20 * time.Millisecond
	deadline := time.Now().Add(limit)
	var st api.Status
	var err error
	for time.Now().Before(deadline) {
		if err = ctx.Err(); err != nil {
			return st, err
		}
		st, err = d.status(ctx)
		if err == nil && check(st) {
			return st, nil
		}
		asked := time.Now()
		timer := time.NewTimer(statusPoll(st, poll))
		select {
		case <-timer.C:
		case <-ctx.Done():
		case _, ok := <-wake:
			if !ok {
				wake = nil // the stream ended: the poll alone from here
			}
			if gap := minGap - time.Since(asked); gap > 0 {
				time.Sleep(gap)
			}
			for drained := false; !drained && wake != nil; {
				select {
				case _, ok := <-wake:
					if !ok {
						wake = nil
					}
				default:
					drained = true
				}
			}
		}
		timer.Stop()
	}
	return st, fmt.Errorf("%s: state not reached within %s (last: %+v, err %v)\n%s", d.name, limit, st.Folders, err, d.logTail())
}

// pollPerFile is the status poll interval per file held (waitState).
const pollPerFile = 2 * time.Microsecond

// statusPoll is poll, or longer for a status counting many files.
func statusPoll(st api.Status, poll time.Duration) time.Duration {
	files := 0
	for _, f := range st.Folders {
		files += f.Files
	}
	return max(poll, time.Duration(files)*pollPerFile)
}

// inSync reports a folder that has finished its scan, has nothing pending
// and holds files files.
func inSync(files int) func(api.Status) bool {
	return func(st api.Status) bool {
		if len(st.Folders) != 1 {
			return false
		}
		f := st.Folders[0]
		return f.InitialScanDone && f.State == "in-sync" && f.Pending == 0 && (files < 0 || f.Files == files)
	}
}

// indexed reports a folder that has finished its scan, has nothing
// pending and holds files files, whether or not a peer is connected (a
// folder whose peers are all away reports "offline").
func indexed(files int) func(api.Status) bool {
	return func(st api.Status) bool {
		if len(st.Folders) != 1 {
			return false
		}
		f := st.Folders[0]
		return f.InitialScanDone && (f.State == "in-sync" || f.State == "offline") && f.Pending == 0 && (files < 0 || f.Files == files)
	}
}

// pair creates a vault on a with an agent running, and joins b (not
// started), both under rc's directory.
func pair(rc *runCtx) (a, b *device, err error) {
	ctx := rc.ctx
	a, b = newDevice(rc, rc.dir, "a"), newDevice(rc, rc.dir, "b")
	if _, err := a.run(ctx, "init", a.folder); err != nil {
		return nil, nil, err
	}
	if err := a.up(ctx, false); err != nil {
		return nil, nil, err
	}
	out, err := a.run(ctx, "invite")
	if err != nil {
		a.kill()
		return nil, nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if _, err := b.run(ctx, "join", lines[len(lines)-1], b.folder); err != nil {
		a.kill()
		return nil, nil, err
	}
	return a, b, nil
}
