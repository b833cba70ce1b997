package folder

import (
	"errors"
	"strings"
	"testing"
)

func TestValidPath(t *testing.T) {
	tests := []struct {
		name string
		path string
		want error
	}{
		{"plain", "a.txt", nil},
		{"nested", "notes/2026/a.md", nil},
		{"dotfile", ".bashrc", nil},
		{"dots inside", "a..b/c...d", nil},
		{"nfc", "caf\u00e9.txt", nil},
		{"ignore file", IgnoreFile, nil},
		{"empty", "", ErrBadPath},
		{"dot", ".", ErrBadPath},
		{"dotdot", "..", ErrBadPath},
		{"escape", "../x", ErrBadPath},
		{"inner escape", "a/../../x", ErrBadPath},
		{"absolute", "/etc/x", ErrBadPath},
		{"trailing slash", "a/", ErrBadPath},
		{"double slash", "a//b", ErrBadPath},
		{"dot component", "a/./b", ErrBadPath},
		{"backslash", `..\x`, ErrBadPath},
		{"nul", "a\x00b", ErrBadPath},
		{"newline", "a\nb", ErrBadPath},
		{"bad utf8", "a\xffb", ErrBadPath},
		{"long name", strings.Repeat("x", 256), ErrBadPath},
		{"long path", strings.Repeat("abcdefgh/", 500) + "x", ErrBadPath},
		{"nfd", "cafe\u0301.txt", ErrNotNFC},
		{"workdir", ".weft", ErrInternalPath},
		{"in workdir", ".weft/db", ErrInternalPath},
		{"temp", "a/" + TempPrefix + "123", ErrInternalPath},
		{"not workdir", "x/.weft", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidPath(tt.path)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("ValidPath(%q) = %v, want %v", tt.path, err, tt.want)
			}
		})
	}
}

func TestCollisionName(t *testing.T) {
	tests := []struct {
		path string
		n    int
		want string
	}{
		{"Readme.md", 1, "Readme.case-conflict.md"},
		{"docs/Readme.md", 2, "docs/Readme.case-conflict-2.md"},
		{"Makefile", 1, "Makefile.case-conflict"},
		{".bashrc", 1, ".bashrc.case-conflict"},
	}
	for _, tt := range tests {
		if got := CollisionName(tt.path, tt.n); got != tt.want {
			t.Errorf("CollisionName(%q, %d) = %q, want %q", tt.path, tt.n, got, tt.want)
		}
	}
}

func TestFoldingKey(t *testing.T) {
	tests := []struct {
		f    Folding
		a, b string
		same bool
	}{
		{Folding{}, "A", "a", false},
		{Folding{CaseInsensitive: true}, "README.md", "readme.MD", true},
		{Folding{CaseInsensitive: true}, "Straße", "STRASSE", true},
		{Folding{NormInsensitive: true}, "cafe\u0301", "caf\u00e9", true},
		{Folding{NormInsensitive: true}, "Cafe", "cafe", false},
	}
	for _, tt := range tests {
		if got := tt.f.Key(tt.a) == tt.f.Key(tt.b); got != tt.same {
			t.Errorf("%+v: Key(%q) == Key(%q) is %v, want %v", tt.f, tt.a, tt.b, got, tt.same)
		}
	}
}

// FuzzValidPath checks that ValidPath never panics and that what it
// accepts can never leave the folder.
func FuzzValidPath(f *testing.F) {
	for _, s := range []string{"a", "../x", "/etc/x", "a/b/../c", ".weft/x", "a\\b", "caf\u00e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidPath(p) != nil {
			return
		}
		if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.Contains(p, "\x00") {
			t.Fatalf("accepted %q", p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == "" || c == "." || c == ".." {
				t.Fatalf("accepted %q with component %q", p, c)
			}
		}
	})
}
