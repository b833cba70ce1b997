package folder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// maxIgnoreFile bounds how much of .weftignore is read.
const maxIgnoreFile = 1 << 20

// Ignore holds the folder's ignore rules: .weftignore at the root, in
// gitignore syntax (patterns, "!" negation, trailing "/" for directories
// only, leading "/" to anchor at the root, "**"), plus the built-in rules
// that are not negotiable: WorkDir and temp files are always ignored.
//
// The pattern matching is go-git's plumbing/format/gitignore (the matcher
// go-git itself uses for worktree status): maintained, git-compatible, and
// only that package and its few small imports are compiled in.
//
// An Ignore is immutable and safe for concurrent use; the zero value and
// nil ignore nothing but the built-in rules.
type Ignore struct {
	m     gitignore.Matcher
	n     int
	stamp FileInfo // lstat of the file the rules were read from
}

// ParseIgnore parses rules in gitignore syntax. Blank lines and lines
// starting with "#" are skipped; "\#" and "\!" escape a leading "#" or "!".
func ParseIgnore(text []byte) *Ignore {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), maxIgnoreFile)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	return &Ignore{m: gitignore.NewMatcher(ps), n: len(ps)}
}

// LoadIgnore reads IgnoreFile at the root of fsys. A missing file gives
// rules that ignore nothing but the built-ins. If prev was loaded from a
// file with the same size, mtime, inode and ctime, prev is returned without
// reading: callers call LoadIgnore at every scan and pay one lstat.
func LoadIgnore(fsys FS, prev *Ignore) (*Ignore, error) {
	info, err := fsys.Lstat(IgnoreFile)
	if errors.Is(err, fs.ErrNotExist) {
		if prev != nil && prev.stamp.Kind == KindNone {
			return prev, nil
		}
		return &Ignore{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", IgnoreFile, err)
	}
	if prev != nil && prev.stamp == info {
		return prev, nil
	}
	if info.Kind != KindFile {
		return &Ignore{stamp: info}, nil
	}
	f, err := fsys.Open(IgnoreFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", IgnoreFile, err)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", IgnoreFile, err)
	}
	ig := ParseIgnore(text)
	ig.stamp = info
	return ig, nil
}

// Match reports whether path (relative, slash-separated) is ignored. isDir
// says whether it is a directory, for patterns ending in "/". A path below
// an ignored directory is ignored too: callers that walk skip the
// directory and never ask.
func (ig *Ignore) Match(path string, isDir bool) bool {
	if IsInternal(path) {
		return true
	}
	if ig == nil || ig.n == 0 {
		return false
	}
	return ig.m.Match(strings.Split(path, "/"), isDir)
}

// Len returns the number of patterns.
func (ig *Ignore) Len() int {
	if ig == nil {
		return 0
	}
	return ig.n
}
