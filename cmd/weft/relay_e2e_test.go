package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// relayProc is a `weft relay` process with its own home.
type relayProc struct {
	t       *testing.T
	home    string
	cmd     *exec.Cmd
	done    chan error
	addrs   []string
	metrics string // host:port of --metrics, when given
	pprof   string // host:port of --pprof, when given
	log     string
	netns   string
}

// startRelay runs `weft relay` on 127.0.0.1 (or listen) and waits for the
// addresses it prints.
func startRelay(t *testing.T, netns string, extra ...string) *relayProc {
	t.Helper()
	return startRelayHome(t, netns, filepath.Join(t.TempDir(), "relay-home"), extra...)
}

// startRelayHome is startRelay with the relay's home given: a relay
// restarted over the home of one stopped before.
func startRelayHome(t *testing.T, netns, home string, extra ...string) *relayProc {
	t.Helper()
	r := &relayProc{t: t, home: home, log: filepath.Join(t.TempDir(), "relay.log"), netns: netns}
	args := append([]string{"--home", r.home, "relay", "--debug"}, extra...)
	if len(extra) == 0 {
		args = append(args, "--listen", "/ip4/127.0.0.1/tcp/0")
	}
	if netns != "" {
		r.cmd = exec.Command("ip", append([]string{"netns", "exec", netns, weftBin}, args...)...)
	} else {
		r.cmd = exec.Command(weftBin, args...)
	}
	lf, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stderr = lf
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.done = make(chan error, 1)
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ready ") {
				var listen []string
				for _, f := range strings.Fields(line) {
					if a, ok := strings.CutPrefix(f, "listen="); ok {
						listen = strings.Split(a, ",")
					}
					if m, ok := strings.CutPrefix(f, "metrics=http://"); ok {
						r.metrics = strings.TrimSuffix(m, "/metrics") // written before ready is sent
					}
					if m, ok := strings.CutPrefix(f, "pprof=http://"); ok {
						r.pprof = strings.TrimSuffix(m, "/debug/pprof/")
					}
				}
				ready <- listen
			}
		}
		r.done <- r.cmd.Wait()
	}()
	select {
	case r.addrs = <-ready:
	case err := <-r.done:
		b, _ := os.ReadFile(r.log)
		t.Fatalf("relay exited before ready: %v\n%s", err, b)
	case <-time.After(60 * time.Second):
		t.Fatal("relay not ready after 60s")
	}
	t.Cleanup(r.stop)
	return r
}

func (r *relayProc) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("relay exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		r.t.Error("relay did not stop within 30s of SIGTERM")
	}
	r.cmd = nil
}

// addr is the relay's first printed multiaddr.
func (r *relayProc) addr() string {
	r.t.Helper()
	if len(r.addrs) == 0 {
		r.t.Fatal("relay printed no address")
	}
	return r.addrs[0]
}

// TestStoreAndForward: A writes while B is offline; A goes offline; B
// starts and gets everything from the relay alone, byte-identical. Then
// the relay's whole home is searched for every file name and for
// plaintext of every file: it must hold neither.
func TestStoreAndForward(t *testing.T) {
	rl := startRelay(t, "")
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder, "--relay", rl.addr())
	a.up()
	out := a.must("invite")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	b.must("join", lines[len(lines)-1], b.folder)

	rng := rand.New(rand.NewPCG(5, 9))
	secrets := map[string][]byte{}
	for i := range 20 {
		name := fmt.Sprintf("notes/secret-note-%02d.md", i)
		body := fmt.Appendf(nil, "# Plaintext marker %d %x\n%s\n", i, rng.Uint64(), strings.Repeat("confidential words ", 50+i))
		a.write(name, body)
		secrets[name] = body
	}
	photo := randBytes(rng, 3<<20)
	a.write("photos/holiday-picture.jpg", photo)
	secrets["photos/holiday-picture.jpg"] = photo

	waitStatus(t, a, 2*time.Minute, func(st api.Status) error {
		f := st.Folders[0]
		if f.Files != len(secrets) {
			return fmt.Errorf("%d files recorded, want %d", f.Files, len(secrets))
		}
		if f.Unsafe != 0 {
			return fmt.Errorf("unsafe %d, want 0 (the relay should hold everything)", f.Unsafe)
		}
		return nil
	})
	a.stop()

	b.up()
	want, err := tree(a.folder)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := tree(b.folder)
		if err == nil && sameTree(want, got) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not get a's folder from the relay:\n%s\nb log:\n%s", diffTree(want, got), b.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	rl.stop()

	// Nothing in the relay's home names a file or holds its plaintext.
	var needles [][]byte
	for name, body := range secrets {
		needles = append(needles, []byte(filepath.Base(name)), []byte(strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))))
		for off := 0; off+32 <= len(body); off += len(body)/8 + 1 {
			needles = append(needles, body[off:off+32])
		}
	}
	needles = append(needles, []byte("confidential words"), []byte("Plaintext marker"))
	files := 0
	err = filepath.WalkDir(rl.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, n := range needles {
			if bytes.Contains(data, n) || strings.Contains(p, string(n)) {
				t.Errorf("relay file %s contains %q", p, n[:min(len(n), 40)])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("relay home is empty")
	}
}
