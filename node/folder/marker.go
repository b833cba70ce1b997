package folder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
)

// MarkerPath is the folder marker: a small file in WorkDir naming the vault
// the folder belongs to. A folder whose marker is gone (an unmounted
// drive, an empty directory where the folder was, a cloud folder that
// failed to sync) is stopped instead of scanned: without it, an empty
// mount point looks exactly like a user who deleted every file, and the
// deletions would reach every device (docs/folder.md, "The folder
// marker").
const MarkerPath = WorkDir + "/folder-marker"

// markerHeader opens every marker, so a person who finds the file knows
// what it is for.
const markerHeader = "weft folder marker: weft stops syncing this folder when this file is missing.\n"

// ErrNoMarker: the folder has no marker (the file is missing).
var ErrNoMarker = errors.New("folder marker missing")

// ErrBadMarker: a marker exists but cannot be read as one.
var ErrBadMarker = errors.New("folder marker unreadable")

// maxMarkerSize bounds what ReadMarker reads: a marker is a few dozen
// bytes, and a file of that name planted by someone else must not make it
// read gigabytes.
const maxMarkerSize = 4 << 10

// ReadMarker returns the vault ID (hex) the folder's marker names. It
// returns an error matching ErrNoMarker when there is none, ErrBadMarker
// when the file is not a marker, and the file system's error otherwise
// (an unreadable folder).
func ReadMarker(fsys FS) (string, error) {
	f, err := fsys.Open(MarkerPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoMarker
	}
	if err != nil {
		return "", fmt.Errorf("opening the folder marker: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMarkerSize+1))
	if err != nil {
		return "", fmt.Errorf("reading the folder marker: %w", err)
	}
	if len(b) > maxMarkerSize {
		return "", fmt.Errorf("%w: larger than %d bytes", ErrBadMarker, maxMarkerSize)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if id, ok := strings.CutPrefix(line, "vault "); ok && id != "" {
			return strings.TrimSpace(id), nil
		}
	}
	return "", fmt.Errorf("%w: it names no vault", ErrBadMarker)
}

// WriteMarker writes the marker naming vault (hex) durably: WorkDir made
// durable in the root, a temporary file in WorkDir, synced, renamed onto
// MarkerPath, WorkDir synced. A marker lost to a power cut would stop the
// folder at the next start.
func WriteMarker(fsys FS, vault string) error {
	if err := fsys.Mkdir(WorkDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", WorkDir, err)
	}
	if err := fsys.SyncDir(""); err != nil {
		return fmt.Errorf("syncing the folder root: %w", err)
	}
	f, err := fsys.CreateTemp(WorkDir, TempPrefix+"marker-")
	if err != nil {
		return fmt.Errorf("writing the folder marker: %w", err)
	}
	tmp := f.Path()
	var buf bytes.Buffer
	buf.WriteString(markerHeader)
	fmt.Fprintf(&buf, "vault %s\n", vault)
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, MarkerPath)
	}
	if err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("writing the folder marker: %w", err)
	}
	if err := fsys.SyncDir(WorkDir); err != nil {
		return fmt.Errorf("syncing %s: %w", WorkDir, err)
	}
	return nil
}
