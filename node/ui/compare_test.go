package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
)

// The conflicts page compares at most compareFirst conflicts and
// compareBudget bytes of their sides; past either, a conflict is not
// compared (nil) or says why.
func TestCompareAllBudgets(t *testing.T) {
	dir := t.TempDir()
	conflict := func(i, size int) api.Conflict {
		of := fmt.Sprintf("n%d.md", i)
		cp := fmt.Sprintf("n%d.conflict-AbCdEfGh-20261130-054657-1a2b3c.md", i)
		for _, p := range []string{of, cp} {
			if err := os.WriteFile(filepath.Join(dir, p), []byte(strings.Repeat("a line\n", size/7)+p+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return api.Conflict{Folder: dir, Path: cp, Of: of}
	}
	var small []api.Conflict
	for i := range compareFirst + 5 {
		small = append(small, conflict(i, 10))
	}
	got := compareAll(small)
	for i, c := range got {
		if (i < compareFirst) != (c != nil && len(c.Rows) > 0) {
			t.Fatalf("conflict %d compared: %v, want only the first %d", i, c != nil, compareFirst)
		}
	}
	large := []api.Conflict{conflict(100, 200<<10), conflict(101, 200<<10), conflict(102, 200<<10)}
	got = compareAll(large)
	if len(got[0].Rows) == 0 || len(got[1].Rows) == 0 || len(got[2].Rows) != 0 || !strings.Contains(got[2].Why, "at most 1024 KiB") {
		t.Fatalf("large sides: compared %d, %d, %d rows; third says %q", len(got[0].Rows), len(got[1].Rows), len(got[2].Rows), got[2].Why)
	}
}
