//go:build !linux

package folder

import (
	"errors"
	"io/fs"
	"os"
)

// readDirInfo lists the open directory f and lstats each entry.
// Entries removed between the listing and the lstat are left out.
func readDirInfo(f *os.File) ([]FileInfo, error) {
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, infoOf(fi))
	}
	return out, nil
}
