// Package workspace gives an agent file tools confined to one directory:
//
//	ws, err := workspace.New("./project")
//	...
//	defer ws.Close()
//	coder, err := agent.NewReAct(m, agent.WithToolsets(ws))
//
// The Toolset offers read_file (numbered lines, a window of a long file),
// list_files (a glob where ** spans directories), grep (a regular
// expression, line by line), write_file and edit_file (exact replacement
// of text that occurs once, or everywhere with replace_all). WithReadOnly
// leaves out the two that write.
//
// Every access goes through an os.Root opened on the directory, so paths
// are relative to it and none reaches outside: an absolute path, one that
// climbs out with "..", and one that leads out through a symbolic link are
// refused with an error result that names the path (its error matches
// ErrOutside), and the walks of list_files and grep enter no linked
// directory (a linked file inside the workspace is listed and searched
// under the link's path).
// The tools' failures the model can correct — a missing file, an edit
// whose text occurs twice, a malformed pattern — are error results that say
// what was wrong.
//
// The read tools are read-only and concurrency-safe; write_file and
// edit_file are destructive (a permission policy can ask before them) and
// run one at a time. WithMaxFileSize bounds the files the tools read,
// search and edit, and WithMaxResults the paths and lines list_files and
// grep return.
package workspace
