//go:build !unix

package workspace

// syncDir does nothing outside unix, where a directory opened as os.Open
// opens it cannot be synced (Windows flushes the buffers of files and
// volumes, not of a directory opened for reading); the file's content is
// synced all the same.
func (w *Toolset) syncDir(string) {}
