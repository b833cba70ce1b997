package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// A file whose name cannot sync (NFD, as copied from macOS) no longer
// leaves status saying in-sync with errors []: the folder is out-of-sync
// with a cannot-sync item naming the path, doctor reports it (exit 3),
// and once the file is renamed the folder is in sync again.
func TestUnsyncableNameIsReported(t *testing.T) {
	a, b := pair(t)
	b.up()
	a.writeAtomic("ok.md", []byte("fine"))
	nfd := "cafe\u0301.md" // "café.md" decomposed
	a.writeAtomic(nfd, []byte("a name macOS wrote"))
	a.must("scan")
	waitStatus(t, a, time.Minute, func(st api.Status) error {
		if err := folderCode("out-of-sync", "cannot-sync")(st); err != nil {
			return err
		}
		for _, e := range st.Folders[0].Errors {
			if e.Code == "cannot-sync" && e.Path == nfd {
				return nil
			}
		}
		return fmt.Errorf("errors %+v, want one for %q", st.Folders[0].Errors, nfd)
	})
	if code, out, _ := a.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "cannot-sync"`) {
		t.Fatalf("doctor on a: exit %d, output:\n%s\nwant exit 3 naming cannot-sync", code, out)
	}
	if err := os.Rename(filepath.Join(a.folder, nfd), filepath.Join(a.folder, "caf\u00e9.md")); err != nil {
		t.Fatal(err)
	}
	a.must("scan")
	waitSame(t, a, b, time.Minute, filesIn(2))
	waitStatus(t, a, time.Minute, inSync)
}

// A file over the size limit (here lowered to 4 chunks with the test-only
// --debug-max-file-chunks, instead of writing 5.9 GiB) is skipped and
// said so: out-of-sync with a too-large item naming it, doctor's problem
// (exit 3); once it is small enough it is recorded and the folder is in
// sync again.
func TestOversizedFileIsReported(t *testing.T) {
	a := newDevice(t, "a")
	a.upArgs = []string{"--mdns=false", "--debug-max-file-chunks", "4"}
	a.must("init", a.folder)
	a.up()
	big := randBytes(rand.New(rand.NewPCG(5, 6)), 4<<20) // some 60 chunks
	a.writeAtomic("disk.img", big)
	a.must("scan")
	waitStatus(t, a, time.Minute, func(st api.Status) error {
		for _, e := range st.Folders[0].Errors {
			if e.Code == "too-large" && e.Path == "disk.img" && st.Folders[0].State == "out-of-sync" {
				return nil
			}
		}
		return fmt.Errorf("state %s, errors %+v, want out-of-sync with too-large for disk.img", st.Folders[0].State, st.Folders[0].Errors)
	})
	if code, out, _ := a.exitCode("doctor", "--json"); code != 3 || !strings.Contains(out, `"kind": "too-large"`) {
		t.Fatalf("doctor on a: exit %d, output:\n%s\nwant exit 3 naming too-large", code, out)
	}
	a.writeAtomic("disk.img", big[:8<<10]) // one chunk
	a.must("scan")
	waitStatus(t, a, time.Minute, inSync)
}
