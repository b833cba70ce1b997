package node

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/weftsync/weft/node/api"
)

// A full disk is recognised through the error chain and, where a library
// drops the errno (goleveldb keeps only the text), by the message; other
// errors are not taken for one.
func TestIsDiskFull(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{syscall.ENOSPC, true},
		{fmt.Errorf("committing scan: %w", &fs.PathError{Op: "write", Path: "/h/000001.log", Err: syscall.ENOSPC}), true},
		{errors.New("leveldb/journal: write /h/000001.log: no space left on device"), true},
		{errors.New("disk quota exceeded"), true},
		{syscall.EIO, false},
		{errors.New("entry: bad signature"), false},
	} {
		if got := isDiskFull(c.err); got != c.want {
			t.Errorf("isDiskFull(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Every failed apply gets a stable code in status, chosen by its cause.
func TestApplyErrorCode(t *testing.T) {
	for reason, want := range map[string]string{
		"writing a.txt: write /f/.weft-tmp-1: no space left on device": api.CodeFolderDiskFull,
		"open /f/a.txt: read-only file system":                         api.CodeReadOnly,
		"open /f/a.txt: permission denied":                             api.CodePermission,
		errChunkMissing.Error() + ": bafy...":                          api.CodeChunkUnavailable,
		"a.txt changed locally since last scan":                        api.CodeLocalEdit,
		"something else":                                               api.CodeApplyFailed,
	} {
		if got := applyErrorCode(reason); got != want {
			t.Errorf("applyErrorCode(%q) = %q, want %q", reason, got, want)
		}
	}
}
