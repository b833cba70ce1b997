package node

import (
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folderstate"
)

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
		if got := folderstate.ErrorCode(reason); got != want {
			t.Errorf("folderstate.ErrorCode(%q) = %q, want %q", reason, got, want)
		}
	}
}
