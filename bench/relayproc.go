package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
)

// relayProc is one `weft relay` process with its own home, listening on
// 127.0.0.1 with its Prometheus /metrics on an ephemeral port.
type relayProc struct {
	bin     string
	home    string
	log     string
	cmd     *exec.Cmd
	done    chan error
	pid     int
	addr    string // the first printed multiaddr, ending in /p2p/ID
	metrics string // http://127.0.0.1:PORT/metrics
	http    *http.Client
}

// startRelay runs `weft relay --listen /ip4/127.0.0.1/tcp/0 --metrics
// 127.0.0.1:0` with its home under dir and waits for its ready line, which
// names the bound listen and metrics addresses (see cmd/weft/relay_cmd.go).
// The relay runs without quotas so a full-scale upload is never refused.
// Its binary, directory and CPU profile come from rc, and with
// Config.RelayChunks "s3" the flags that keep its chunks in rc's S3 server.
func startRelay(rc *runCtx) (*relayProc, error) {
	ctx, bin, dir := rc.ctx, rc.cfg.Bin, rc.dir
	r := &relayProc{
		bin: bin, home: filepath.Join(dir, "relay", "home"), log: filepath.Join(dir, "relay", "relay.log"),
		http: &http.Client{Timeout: time.Minute},
	}
	if err := os.MkdirAll(filepath.Dir(r.log), 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(r.log)
	if err != nil {
		return nil, err
	}
	args := []string{"--home", r.home, "relay", "--listen", "/ip4/127.0.0.1/tcp/0", "--metrics", "127.0.0.1:0", "--no-quota"}
	if s := rc.cfg.s3; s != nil {
		args = append(args, s.relayArgs(rc)...)
	}
	cmd := exec.Command(bin, append(args, rc.profileArgs("relay")...)...)
	if s := rc.cfg.s3; s != nil {
		cmd.Env = s.env()
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("relay: starting: %w", err)
	}
	r.cmd, r.pid = cmd, cmd.Process.Pid
	r.done = make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				ready <- sc.Text()
			}
		}
		err := cmd.Wait()
		logf.Close()
		r.done <- err
	}()
	select {
	case line := <-ready:
		if err := r.parseReady(line); err != nil {
			r.kill()
			return nil, err
		}
	case err := <-r.done:
		r.cmd = nil
		return nil, fmt.Errorf("relay: exited before ready: %v\n%s", err, r.logTail())
	case <-time.After(2 * time.Minute):
		r.kill()
		return nil, fmt.Errorf("relay: not ready after 2m\n%s", r.logTail())
	case <-ctx.Done():
		r.kill()
		return nil, ctx.Err()
	}
	return r, nil
}

// parseReady reads `ready relay=ID listen=MA,... metrics=URL`.
func (r *relayProc) parseReady(line string) error {
	for _, f := range strings.Fields(line) {
		if a, ok := strings.CutPrefix(f, "listen="); ok {
			r.addr, _, _ = strings.Cut(a, ",")
		}
		if m, ok := strings.CutPrefix(f, "metrics="); ok {
			r.metrics = m
		}
	}
	if r.addr == "" || r.metrics == "" {
		return fmt.Errorf("relay: ready line without listen= or metrics=: %q", line)
	}
	return nil
}

// stop ends the relay with SIGTERM and waits for it to exit.
func (r *relayProc) stop() error {
	if r.cmd == nil {
		return nil
	}
	terminate(r.pid)
	var err error
	select {
	case err = <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		err = errors.New("relay: did not stop within 30s of SIGTERM")
	}
	r.cmd = nil
	return err
}

// kill ends the relay with SIGKILL.
func (r *relayProc) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

func (r *relayProc) logTail() string {
	b, _ := os.ReadFile(r.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// usage reads the relay's CPU seconds and RSS from /proc.
func (r *relayProc) usage() (procUsage, error) {
	if r.cmd == nil {
		return procUsage{}, errors.New("relay: not running")
	}
	return readProc(r.pid)
}

// scrape reads the relay's /metrics and sums each metric over its labels
// (the harness runs one vault per relay, or wants the total).
func (r *relayProc) scrape(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("relay: scraping metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("relay: scraping metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// parseMetrics parses Prometheus text exposition into sums per metric
// name, labels dropped, and for series with a kind label also sums per
// name and kind (withKind).
func parseMetrics(rd io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, labels := line, "", ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				return nil, fmt.Errorf("metrics line %q: unterminated labels", line)
			}
			labels, rest = rest[:j+1], rest[j+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[name] += v
		if k, ok := labelKind(labels); ok {
			out[withKind(name, k)] += v
		}
	}
	return out, sc.Err()
}

// The relay metrics the harness reads (relay/metrics.go, docs/operations.md).
const (
	mStored   = "weft_relay_vault_bytes_stored"
	mWanted   = "weft_relay_vault_chunks_wanted"
	mOnDisk   = "weft_relay_vault_bytes_on_disk"
	mEntries  = "weft_relay_vault_entries"
	mChunks   = "weft_relay_vault_chunks"
	mReceived = "weft_relay_bytes_received_total"
	mSent     = "weft_relay_bytes_sent_total"
)

// relayDevice creates a device whose vault lists the relay (`weft init
// FOLDER --relay MA`), with its agent running.
func relayDevice(rc *runCtx, name string, r *relayProc) (*device, error) {
	d := newDevice(rc, rc.dir, name)
	if _, err := d.run(rc.ctx, "init", d.folder, "--relay", r.addr); err != nil {
		return nil, err
	}
	if err := d.up(rc.ctx, false); err != nil {
		return nil, err
	}
	return d, nil
}

// relayPair is relayDevice for a, and b joined to a's vault (not started).
func relayPair(rc *runCtx, r *relayProc) (a, b *device, err error) {
	ctx := rc.ctx
	a, err = relayDevice(rc, "a", r)
	if err != nil {
		return nil, nil, err
	}
	b = newDevice(rc, rc.dir, "b")
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

// safe reports a folder that holds files files, has finished its scan,
// has nothing pending and none of its own entries unsafe: a relay holds
// every one, so the device may be switched off.
func safe(files int) func(api.Status) bool {
	return func(st api.Status) bool {
		if !indexed(files)(st) {
			return false
		}
		return st.Folders[0].Unsafe == 0
	}
}
