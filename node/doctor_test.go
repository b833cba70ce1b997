package node

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/store/home"
)

// kinds names findings as severity:kind, for comparisons.
func kinds(fs []api.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity+":"+f.Kind)
	}
	return out
}

// denyFS refuses to open one path, as a file the agent's user may not read.
type denyFS struct {
	folder.FS
	deny string
}

func (d denyFS) Open(p string) (folder.File, error) {
	if p == d.deny {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
	}
	return d.FS.Open(p)
}

// apiNode runs a node with its local API on loopback and a folder whose
// file "secret.txt" cannot be read.
func apiNode(t *testing.T) (*Node, *home.Home, string) {
	t.Helper()
	n, folderPath := testNodeWith(t, Config{APIAddr: "127.0.0.1:0", NoWatcher: true,
		FolderFS: func(d string) (folder.FS, error) {
			f, err := folder.OpenOS(d)
			return denyFS{f, "secret.txt"}, err
		}})
	return n, n.cfg.Home, folderPath
}

func TestDoctorNamesUnreadableFile(t *testing.T) {
	n, _, dir := apiNode(t)
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := n.API().Diagnose(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Healthy || !slices.Contains(kinds(d.Findings), "problem:unreadable") {
		t.Fatalf("got healthy=%v findings %v, want problem:unreadable", d.Healthy, kinds(d.Findings))
	}
	for _, f := range d.Findings {
		if f.Kind == "unreadable" && (f.Path != "secret.txt" || !strings.Contains(f.Fix, "chmod")) {
			t.Errorf("got %+v, want secret.txt with a chmod fix", f)
		}
	}
	// Asking about the readable file alone: in sync.
	d, err = n.API().Diagnose(context.Background(), filepath.Join(dir, "ok.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Healthy || d.Path != "ok.txt" {
		t.Fatalf("got healthy=%v path %q findings %v, want ok.txt healthy", d.Healthy, d.Path, kinds(d.Findings))
	}
	if _, err := n.API().Diagnose(context.Background(), filepath.Join(t.TempDir(), "elsewhere")); !errors.Is(err, errNotInFolder) {
		t.Fatalf("a path outside the folder: got %v, want errNotInFolder", err)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	n, h, dir := apiNode(t)
	// The node's first rescan runs as it starts; a file created and then
	// written in place could be caught empty by it and recorded twice.
	// Write elsewhere and rename into the folder so a scan sees it whole.
	tmp := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(tmp, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	info, err := h.ReadAPIInfo()
	if err != nil {
		t.Fatal(err)
	}
	get := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+info.Addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Fatalf("without the token: got %d, want 401", code)
	}
	code, body := get(info.Token)
	if code != http.StatusOK {
		t.Fatalf("got %d, want 200", code)
	}
	for _, want := range []string{
		`weft_entries_written_total{folder="` + dir + `"} 1`,
		`weft_folder_files{folder="` + dir + `"} 2`, // a.txt and secret.txt's index record is absent: see below
		`weft_folder_pending{folder="` + dir + `",kind="upload"} 0`,
		`weft_folder_state{folder="` + dir + `",state="in-sync"} 1`,
		`weft_folder_unsafe_entries{folder="` + dir + `"} 1`,
		"weft_chunks_served_total 0",
		"go_goroutines",
	} {
		if strings.HasPrefix(want, "weft_folder_files") {
			want = `weft_folder_files{folder="` + dir + `"} 1` // secret.txt is unreadable, so not recorded
		}
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
