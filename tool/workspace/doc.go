// Package workspace gives an agent file tools confined to one directory:
//
//	ws, err := workspace.New("./project")
//	...
//	defer ws.Close()
//	coder, err := agent.NewReAct(m, agent.WithToolsets(ws))
//
// The Toolset offers read_file (numbered lines, a window of a long file),
// list_files (a glob where ** spans directories), grep (a regular
// expression, line by line), write_file, edit_file (exact replacement of
// text that occurs once, or everywhere with replace_all) and notebook_edit
// (a cell of a Jupyter notebook). WithReadOnly leaves out the three that
// write.
//
// # Jupyter notebooks
//
// read_file shows a notebook (a file whose name ends in .ipynb, nbformat
// 4) cell by cell rather than as the JSON it is: each cell's number (from
// 0), type and id, its source lines numbered from 1 within the cell (as
// Jupyter's tracebacks count them), and its outputs in short — text cut to
// 20 lines, without the terminal escapes that color it and, of a line
// redrawn after carriage returns (a progress bar), its last drawing;
// images and other data named by their MIME type. offset and limit count
// the lines of that rendering. A file that is not a valid notebook is
// shown as its text, after a line that says what is wrong. A UTF-8 byte
// order mark before the JSON is allowed, and an edit keeps it.
//
// notebook_edit replaces the source of a cell (and its type, with
// cell_type), inserts a cell after another or at the start, or deletes
// one; the cell is picked by its id (nbformat 4.5 and later) or its
// number. A code cell whose source changes loses its outputs and execution
// count, which no longer match it, and a change of type adds and removes
// the fields nbformat requires and allows for each type. The edit rewrites
// only the bytes of the cell it changes: everything else in the file —
// other cells, metadata, fields nbformat does not define, key order,
// indentation and escapes — stays byte for byte as it was, and what is
// written is laid out like the rest of the file, as Jupyter writes it when
// the file came from Jupyter (sources as lists of lines, UTF-8 unescaped).
// A cell inserted into an nbformat 4.5 or later notebook gets a new id.
//
// # Confinement
//
// Every access goes through an os.Root opened on the directory, so paths
// are relative to it and none reaches outside: an absolute path, one that
// climbs out with "..", and one that leads out through a symbolic link are
// refused with an error result that names the path (its error matches
// ErrOutside), and the walks of list_files and grep enter no linked
// directory (a linked file inside the workspace is listed and searched
// under the link's path). A hard link is a name of the file itself, which
// no path check can tell from any other: a hard link placed in the
// directory to a file outside it is read like a file of the workspace, but
// never written (see below).
// The tools' failures the model can correct — a missing file, an edit
// whose text occurs twice, a malformed pattern, a cell id no cell has, a
// file that is not a notebook — are error results that say what was
// wrong, and a failed edit writes nothing.
//
// The read tools are read-only and concurrency-safe; write_file, edit_file
// and notebook_edit are destructive (a permission policy can ask before
// them) and run one at a time. They replace a file by renaming a
// temporary file with its new content over it (named after the file:
// ".name.<12 hexadecimal digits>.tmp", which list_files and grep leave
// out), so a write that fails halfway leaves the file as it was. The new
// version keeps the file's permission bits and, where the process may
// give them (as root may), its owner and group; a new file gets the mode
// the umask leaves of 0644; a file the process may not write is refused.
// Symbolic links and files whose owner the process cannot give a new file
// are written in place, and so are files in a directory the process may
// not write. A file with more than one hard link is not written
// (ErrHardLinked): its other names may lie outside the workspace, which a
// hard link, unlike a symbolic one, does not show. Toolsets on the same
// directory do not coordinate: of two writes of one file, the last wins.
// WithMaxFileSize bounds the files the tools read, search and edit, and
// WithMaxResults the paths and lines list_files and grep return.
package workspace
