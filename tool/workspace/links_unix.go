//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// links returns the number of hard links to the file info describes.
func links(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
