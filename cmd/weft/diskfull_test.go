package main

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/node"
	"github.com/weftsync/weft/node/folder"
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

	waitStatus(t, b, time.Minute, func(st node.Status) error {
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
	mountTmpfs(t, filepath.Dir(a.home)+"/homefs", "64m")
	a.home = filepath.Dir(a.home) + "/homefs/home"
	a.must("init", a.folder)
	a.write("before.txt", []byte("recorded before the disk filled"))
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

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	a.must("scan")
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
}
