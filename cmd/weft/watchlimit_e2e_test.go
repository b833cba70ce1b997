package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// TestWatchLimitFallsBackToRescans runs B's agent in a user namespace
// whose inotify watch limit (40) is below the folder's 80 directories.
// Before, the watcher stopped for the whole folder and changes went unseen
// until the full rescan 10 minutes later, while status said in-sync. Now B
// watches what it can and rescans the rest every 10 s: its folder is
// out-of-sync with code watcher-limit (status, doctor's problem and exit
// code, /metrics), a change in every directory reaches A within the
// test's minute, and once the limit is raised B watches everything again
// by itself and is in-sync.
func TestWatchLimitFallsBackToRescans(t *testing.T) {
	if err := exec.Command("unshare", "--user", "--map-root-user", "sh", "-c", "echo 40 > /proc/sys/user/max_inotify_watches").Run(); err != nil {
		t.Skipf("cannot lower inotify's limit in a user namespace here: %v", err)
	}
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder)
	const dirs = 80
	want := map[string]string{}
	for i := range dirs {
		p := fmt.Sprintf("d%02d/first.txt", i)
		want[p] = "first " + p
		a.write(p, []byte(want[p]))
	}
	a.up()
	lines := strings.Split(strings.TrimSpace(a.must("invite")), "\n")
	b.must("join", lines[len(lines)-1], b.folder)
	b.watchLimit = 40
	b.up()
	waitHolding(t, a, b, want)

	waitStatus(t, b, time.Minute, func(st api.Status) error {
		f := st.Folders[0]
		for _, e := range f.Errors {
			if e.Code == "watcher-limit" && f.State == "out-of-sync" && strings.Contains(e.Reason, "/proc/sys/user/max_inotify_watches") {
				return nil
			}
		}
		return fmt.Errorf("state %s, errors %+v", f.State, f.Errors)
	})
	if code, out, _ := b.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "watcher-limit"`) {
		t.Fatalf("doctor on b: exit %d, output:\n%s\nwant exit 3 naming watcher-limit", code, out)
	}
	if m := deviceMetrics(t, b); !strings.Contains(m, "weft_watcher_unwatched_directories{") || strings.Contains(m, "weft_watcher_unwatched_directories{folder=\""+b.folder+"\"} 0") {
		t.Fatalf("b's /metrics does not count unwatched directories:\n%s", grepLines(m, "unwatched"))
	}

	// A change in every directory, watched or not, reaches A without
	// waiting for the 10-minute full rescan.
	for i := range dirs {
		p := fmt.Sprintf("d%02d/second.txt", i)
		want[p] = "second " + p
		b.write(p, []byte(want[p]))
	}
	waitHolding(t, a, b, want)

	// The limit raised: B watches everything again and is in-sync.
	pid := strconv.Itoa(b.cmd.Process.Pid)
	if out, err := exec.Command("nsenter", "--user", "--target", pid, "sh", "-c", "echo 100000 > /proc/sys/user/max_inotify_watches").CombinedOutput(); err != nil {
		t.Fatalf("raising the limit in b's user namespace: %v: %s", err, out)
	}
	waitInSync(t, a, b)
	if f := b.status().Folders[0]; len(f.Errors) != 0 {
		t.Errorf("errors after the limit was raised: %+v", f.Errors)
	}
}
