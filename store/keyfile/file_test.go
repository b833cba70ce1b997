package keyfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func skipOnWindows(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("permission bits and symlinks behave differently on Windows")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "deeper", "device.key")
	data := []byte("secret\x00bytes\n")
	if err := Save(path, data); err != nil {
		t.Fatalf("Save: %v", err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("got %q, want %q", got, data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file permissions: got %04o, want 0600", perm)
	}
	for _, d := range []string{filepath.Join(dir, "sub"), filepath.Dir(path)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("created directory %s: got permissions %04o, want 0700", d, perm)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1 (no temporary file left)", len(entries))
	}
}

// TestSaveReplaces: saving over a world-readable file leaves a 0600 one.
func TestSaveReplaces(t *testing.T) {
	skipOnWindows(t)
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, []byte("new")); err != nil {
		t.Fatalf("Save: %v", err)
	}
	got, err := Load(path)
	if err != nil || string(got) != "new" {
		t.Errorf("got (%q, %v), want (\"new\", nil)", got, err)
	}
}

func TestSaveRefuses(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "adir")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
	}{
		{"symlink to a file", link, ErrSymlink},
		{"dangling symlink", dangling, ErrSymlink},
		{"directory", sub, ErrNotRegular},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Save(tt.path, []byte("secret")); !errors.Is(err, tt.want) {
				t.Errorf("got %v, want %v", err, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(target); string(b) != "untouched" {
		t.Errorf("link target: got %q, want it untouched", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling link's target was created")
	}
}

func TestLoadRefuses(t *testing.T) {
	skipOnWindows(t)
	dir := t.TempDir()
	write := func(name string, perm os.FileMode, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil { // not subject to umask
			t.Fatal(err)
		}
		return p
	}
	good := write("good", 0o600, []byte("x"))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       error
		msg        string
	}{
		{"0644", write("p644", 0o644, []byte("x")), ErrInsecurePermissions, "chmod 600 "},
		{"0640", write("p640", 0o640, []byte("x")), ErrInsecurePermissions, "permissions 0640"},
		{"0604", write("p604", 0o604, []byte("x")), ErrInsecurePermissions, "chmod 600"},
		{"0700", write("p700", 0o700, []byte("x")), nil, ""},
		{"0400", write("p400", 0o400, []byte("x")), nil, ""},
		{"symlink to a 0600 file", link, ErrSymlink, "symbolic link"},
		{"directory", dir, ErrNotRegular, ""},
		{"missing", filepath.Join(dir, "missing"), fs.ErrNotExist, ""},
		{"too large", write("big", 0o600, make([]byte, maxSize+1)), ErrTooLarge, ""},
		{"largest allowed", write("big-ok", 0o600, make([]byte, maxSize)), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path)
			if tt.want == nil {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err, tt.msg)
			}
		})
	}
}
