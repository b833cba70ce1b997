package watch

import (
	"io/fs"
	"os"
)

// lstatOS lstats an absolute OS path (the watcher works on the real
// directory: fsnotify has no FS seam).
func lstatOS(name string) (fs.FileInfo, error) { return os.Lstat(name) }
