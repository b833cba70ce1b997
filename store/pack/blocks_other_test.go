//go:build !unix

package pack

import "os"

// allocated falls back to the file's length where st_blocks is unknown.
func allocated(fi os.FileInfo) int64 { return fi.Size() }
