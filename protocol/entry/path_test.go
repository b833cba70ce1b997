package entry

import (
	"errors"
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"a", true},
		{"notes/2026/today.md", true},
		{"été/日本語.txt", true},
		{"with space/and-dash_.x", true},
		{".hidden/..dots/...", true},
		{"a:b", true}, // awkward on Windows, valid here
		{strings.Repeat("a", MaxSegmentLen), true},
		{strings.Repeat("a/", MaxPathLen/2-1) + "aa", true},
		{"", false},
		{"/etc/passwd", false},
		{"a/", false},
		{"a//b", false},
		{".", false},
		{"..", false},
		{"a/../b", false},
		{"a/./b", false},
		{"../a", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\x7fb", false},
		{"a\u0085b", false}, // C1 control
		{"a\\b", false},
		{"..\\x", false},
		{"\xff", false},
		{"e\u0301", false}, // NFD é
		{strings.Repeat("a", MaxSegmentLen+1), false},
		{strings.Repeat("a/", MaxPathLen/2) + "a", false},
	}
	for _, tt := range tests {
		name := tt.path
		if len(name) > 20 {
			name = name[:20]
		}
		t.Run(name, func(t *testing.T) {
			err := ValidatePath(tt.path)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidatePath(%q): got %v, want ok=%v", tt.path, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadPath) {
				t.Fatalf("got %v, want ErrBadPath", err)
			}
		})
	}
}
