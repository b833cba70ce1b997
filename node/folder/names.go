package folder

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// probeDir is where Probe creates its test names, inside WorkDir.
const probeDir = WorkDir + "/probe"

// Probe finds out how fsys compares names by creating two names in
// WorkDir/probe (created if needed, removed afterwards) and looking them up
// under a different case and normalisation. Call it once at startup.
func Probe(fsys FS) (Folding, error) {
	var f Folding
	for _, d := range []string{WorkDir, probeDir} {
		if err := fsys.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return f, fmt.Errorf("probing name folding: %w", err)
		}
	}
	ask := func(create, lookup string) (bool, error) {
		p := probeDir + "/" + create
		if err := fsys.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return false, fmt.Errorf("probing name folding: %w", err)
		}
		defer fsys.Remove(p)
		_, err := fsys.Lstat(probeDir + "/" + lookup)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	var err error
	if f.CaseInsensitive, err = ask("case-Probe", "CASE-pROBE"); err != nil {
		return f, err
	}
	// "é" decomposed (NFD) created, composed (NFC) looked up.
	if f.NormInsensitive, err = ask("norm-e\u0301", "norm-\u00e9"); err != nil {
		return f, err
	}
	fsys.Remove(probeDir)
	return f, nil
}

// CollisionName returns the n-th (n >= 1) name under which a path that
// collides with another live path on a folding file system is written:
// the base name's stem, ".case-conflict", "-n" when n > 1, then the
// extension, e.g. docs/Readme.md -> docs/Readme.case-conflict.md. The name
// depends only on the path, so repeated applies land on the same name.
func CollisionName(p string, n int) string {
	dir, base := splitPath(p)
	stem, ext := splitExt(base)
	s := stem + ".case-conflict"
	if n > 1 {
		s += "-" + strconv.Itoa(n)
	}
	return joinPath(dir, s+ext)
}

// splitExt splits a base name into its stem and its extension (from the
// last dot, which is not the first character): "Readme.md" -> "Readme",
// ".md"; ".bashrc" -> ".bashrc", "".
func splitExt(base string) (stem, ext string) {
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[:i], base[i:]
	}
	return base, ""
}
