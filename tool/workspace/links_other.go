//go:build !unix

package workspace

import "io/fs"

// links returns 1: outside unix the file's link count is not at hand, and
// the file is taken to have no other names.
func links(fs.FileInfo) uint64 { return 1 }

// owner reports that the file's owner is not known: outside unix a file
// replaced by a new one is not given its old owner.
func owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }
