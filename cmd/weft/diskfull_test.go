package main

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/store/home"
)

// mountTmpfs mounts a tmpfs of size at dir for the test (root only; the
// test is skipped where it cannot mount) and unmounts it at the end.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small file system")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

// TestFolderDiskFull fills the disk of B's folder during a first sync: B
// applies what fits, says why it stopped (status errors name the disk
// being full), never shows a partial file under its final name, and once
// the file system has room again converges without a restart and leaves
// no temporary file behind. A's files are never touched.
func TestFolderDiskFull(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	mountTmpfs(t, b.folder, "3m")
	a.must("init", a.folder)
	a.up()
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.must("join", lines[len(lines)-1], b.folder)

	r := rand.New(rand.NewPCG(11, 12))
	want := map[string][]byte{}
	for i := range 12 {
		p := fmt.Sprintf("media/clip%02d.bin", i)
		want[p] = randBytes(r, 512<<10) // 6 MiB in all, twice the room
		a.writeAtomic(p, want[p])
	}
	var mu sync.Mutex
	stop := make(chan struct{})
	torn := watchTorn(b.folder, func(rel string, data []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		return string(want[rel]) == string(data)
	}, stop)
	b.up()

	waitStatus(t, b, time.Minute, func(st api.Status) error {
		for _, e := range st.Folders[0].Errors {
			if strings.Contains(e.Reason, "no space left") {
				return nil
			}
		}
		return fmt.Errorf("no disk-full error yet (%d errors, %d pending)", len(st.Folders[0].Errors), st.Folders[0].Pending)
	})
	if st := b.status(); st.Folders[0].State == "in-sync" {
		t.Errorf("b says in-sync with its disk full")
	}

	if out, err := exec.Command("mount", "-o", "remount,size=64m", b.folder).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v: %s", err, out)
	}
	waitSame(t, a, b, 2*time.Minute, func(m map[string]string) error {
		for p, data := range want {
			if m[p] != "file:"+string(data) {
				return fmt.Errorf("%s not complete yet", p)
			}
		}
		return nil
	})
	waitInSync(t, b)
	close(stop)
	if msg, ok := <-torn; ok {
		t.Fatalf("a partially written file was visible: %s", msg)
	}
	filepath.WalkDir(b.folder, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), folder.TempPrefix) {
			t.Errorf("temporary file left in b's folder: %s", p)
		}
		return nil
	})
	if st := b.status(); len(st.Folders[0].Errors) != 0 {
		t.Errorf("errors still reported after the disk has room: %+v", st.Folders[0].Errors)
	}
}

// fillDisk writes a file into dir until its file system is full and
// returns its path; removing it gives the room back.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{64 << 10, 4 << 10, 1} { // to the last byte
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				if !strings.Contains(err.Error(), "no space left") {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return p
}

// TestHomeDiskFull fills the disk that holds A's home (its vault database)
// while A's agent runs: edits made meanwhile cannot be recorded, and A
// says so instead of losing them; once there is room again they are
// recorded and reach B without a restart, and what A had recorded before
// is intact.
func TestHomeDiskFull(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	homeOnSmallDisk(t, a)
	pairWithBefore(t, a, b, "recorded before the disk filled")

	filler := fillDisk(t, filepath.Dir(a.home))
	// Enough to need new pages in the log and the index, not only the
	// slack at the end of their last ones.
	const during = 200
	for i := range during {
		a.write(fmt.Sprintf("during/n%d.txt", i), []byte(fmt.Sprintf("written while A's home was full %d\n%s", i, strings.Repeat("x", 2000))))
	}
	// A cannot record the edits: its scan fails and says why.
	_, err := a.run("scan")
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("weft scan on a full home: got %v, want an error naming the full disk\n%s", err, a.logTail())
	}
	if f := a.status().Folders[0]; f.State != "error" || len(f.Errors) == 0 || f.Errors[0].Code != "home-disk-full" {
		t.Fatalf("a's status with its home full: state %s, errors %+v; want error with home-disk-full", f.State, f.Errors)
	}

	// Room again: A finds it by itself (a probe every 5 s), rescans and
	// records the edits, with no `weft scan`.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		for i := range during {
			p := fmt.Sprintf("during/n%d.txt", i)
			if m[p] != fmt.Sprintf("file:written while A's home was full %d\n%s", i, strings.Repeat("x", 2000)) {
				return fmt.Errorf("%s not synced", p)
			}
		}
		if m["before.txt"] != "file:recorded before the disk filled" {
			return fmt.Errorf("before.txt changed: %q", m["before.txt"])
		}
		return nil
	})
	waitInSync(t, a, b)
	if st := a.status(); len(st.Folders[0].Errors) != 0 {
		t.Errorf("errors still reported after the home has room: %+v", st.Folders[0].Errors)
	}
}

// TestHomeDiskFullWhileReceiving fills the disk that holds B's home while
// A sends it 300 notes. B cannot store A's entries: its folder is in state
// error with code home-disk-full (status, doctor's problem and exit code,
// /metrics), its log says once that its own home's disk is full and never
// blames A ("refused an invalid entry", as it did), and once there is room
// again B receives everything by itself, without a restart or a scan, and
// is in-sync with no errors.
func TestHomeDiskFullWhileReceiving(t *testing.T) {
	a, b := newDevice(t, "a"), newDevice(t, "b")
	b.logDir = filepath.Dir(b.home) // the log stays off the small disk
	homeOnSmallDisk(t, b)
	pairWithBefore(t, a, b, "synced before B's home filled")

	filler := fillDisk(t, filepath.Dir(b.home))
	const notes = 300
	note := func(i int) string {
		return fmt.Sprintf("note %d from A\n%s", i, strings.Repeat("y", 3000))
	}
	for i := range notes {
		a.write(fmt.Sprintf("in/n%03d.txt", i), []byte(note(i)))
	}
	a.must("scan")

	waitStatus(t, b, time.Minute, func(st api.Status) error {
		f := st.Folders[0]
		for _, e := range f.Errors {
			if e.Code == "home-disk-full" && f.State == "error" && e.Since != nil && strings.Contains(e.Reason, "home") {
				return nil
			}
		}
		return fmt.Errorf("state %s, errors %+v", f.State, f.Errors)
	})
	if code, out, _ := b.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "home-disk-full"`) {
		t.Fatalf("doctor on b: exit %d, output:\n%s\nwant exit 3 naming home-disk-full", code, out)
	}
	m := deviceMetrics(t, b)
	if !strings.Contains(m, `weft_folder_error_codes{code="home-disk-full"`) || !strings.Contains(m, `kind="home-disk-full"`) {
		t.Fatalf("b's /metrics has no home-disk-full error:\n%s", grepLines(m, "error"))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitSame(t, a, b, 2*time.Minute, func(m map[string]string) error {
		for i := range notes {
			p := fmt.Sprintf("in/n%03d.txt", i)
			if m[p] != "file:"+note(i) {
				return fmt.Errorf("%s not synced", p)
			}
		}
		return nil
	})
	waitInSync(t, a, b)
	if st := b.status(); len(st.Folders[0].Errors) != 0 {
		t.Errorf("errors still reported after the home has room: %+v", st.Folders[0].Errors)
	}
	log := b.logTail()
	if all, _ := os.ReadFile(b.logPath()); len(all) > 0 {
		log = string(all)
	}
	if strings.Contains(log, "refused an invalid entry") {
		t.Errorf("b blamed its peer for its own full disk:\n%s", grepLines(log, "invalid entry"))
	}
	if n := strings.Count(log, "the disk that holds weft's home is full"); n == 0 {
		t.Errorf("b never logged that its home's disk is full:\n%s", b.logTail())
	}
	if !strings.Contains(log, "has room again") {
		t.Errorf("b never logged that its home has room again:\n%s", b.logTail())
	}
}

// homeOnSmallDisk moves d's home (not yet created) onto a 64 MiB tmpfs
// the test mounts, so that the test can fill it.
func homeOnSmallDisk(t *testing.T, d *device) {
	t.Helper()
	mountTmpfs(t, filepath.Dir(d.home)+"/homefs", "64m")
	d.home = filepath.Dir(d.home) + "/homefs/home"
}

// pairWithBefore creates a vault on a holding before.txt (content), joins
// b, runs both agents and waits for b to have the file.
func pairWithBefore(t *testing.T, a, b *device, content string) {
	t.Helper()
	a.must("init", a.folder)
	a.write("before.txt", []byte(content))
	a.up()
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.must("join", lines[len(lines)-1], b.folder)
	b.up()
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["before.txt"] == "" {
			return fmt.Errorf("before.txt not synced")
		}
		return nil
	})
}

// deviceMetrics reads an agent's /metrics through its local API.
func deviceMetrics(t *testing.T, d *device) string {
	t.Helper()
	h, err := home.Open(d.home)
	if err != nil {
		t.Fatal(err)
	}
	info, err := h.ReadAPIInfo()
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+info.Addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
