package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node"
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
	waitStatus(t, a, time.Minute, func(st node.Status) error {
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
