package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trellis-go/trellis/tool"
)

// NotebookEditArgs are the arguments of notebook_edit.
type NotebookEditArgs struct {
	// Path is the notebook's path, relative to the workspace.
	Path string `json:"path" jsonschema:"minLength=1" jsonschema_description:"The notebook's path, relative to the workspace, with / between segments: a Jupyter notebook, whose name ends in .ipynb."`
	// CellID picks a cell by its id (nbformat 4.5 and later).
	CellID string `json:"cell_id,omitempty" jsonschema_description:"The id of the cell to replace or delete, or to insert the new cell after, as read_file shows it. Give cell_id or cell_number, not both."`
	// CellNumber picks a cell by its position, from 0.
	CellNumber *int `json:"cell_number,omitempty" jsonschema:"minimum=0" jsonschema_description:"The position of the cell to replace or delete, or to insert the new cell after, counting from 0, as read_file shows it. Numbers change when cells are inserted or deleted; ids do not."`
	// NewSource is the cell's new source.
	NewSource *string `json:"new_source,omitempty" jsonschema_description:"The cell's whole new source, as plain text with line breaks (no line-number prefixes). To insert, leave it out for an empty cell; to replace, leave it out to change only the cell's type."`
	// CellType is the type of a new cell, or the new type of a replaced one.
	CellType string `json:"cell_type,omitempty" jsonschema:"enum=code,enum=markdown,enum=raw" jsonschema_description:"The type of the cell: code, markdown or raw. Required to insert; to replace, give it only to change the cell's type."`
	// EditMode is what to do: replace (when empty), insert or delete.
	EditMode string `json:"edit_mode,omitempty" jsonschema:"enum=replace,enum=insert,enum=delete" jsonschema_description:"replace (the default) replaces the cell's source (and type, with cell_type); insert adds a new cell after the cell given, or at the start when no cell is given; delete removes the cell."`
}

// The edit modes of notebook_edit.
const (
	modeReplace = "replace"
	modeInsert  = "insert"
	modeDelete  = "delete"
)

// The cell types of nbformat 4.
const (
	cellCode     = "code"
	cellMarkdown = "markdown"
	cellRaw      = "raw"
)

// isNotebook reports whether p names a Jupyter notebook, by its extension.
func isNotebook(p string) bool { return strings.EqualFold(path.Ext(p), ".ipynb") }

func (w *Toolset) notebookEditTool() (tool.Tool, error) {
	return tool.NewFunc(NotebookEditName,
		"Edits one cell of a Jupyter notebook (.ipynb) of the workspace, keeping the rest of the file as it was. "+
			"edit_mode replace (the default) replaces the source of the cell given by cell_id or cell_number, and its type when cell_type is given; "+
			"insert adds a new cell of cell_type holding new_source after the cell given, or at the start when none is; delete removes the cell given. "+
			"Read the notebook with read_file first: it shows each cell's number and id. "+
			"Replacing a code cell's source clears its outputs and execution count, which no longer match it. Cell numbers count from 0 and shift when cells are inserted or deleted.",
		func(ctx context.Context, in NotebookEditArgs) (string, error) {
			p, err := clean(in.Path)
			if err != nil {
				return "", err
			}
			if !isNotebook(p) {
				return "", fmt.Errorf("%q is not a Jupyter notebook (its name does not end in .ipynb); notebook_edit edits notebooks, edit_file other files", clip(p))
			}
			mode := in.EditMode
			if mode == "" {
				mode = modeReplace
			}
			if err := checkNotebookEdit(mode, in); err != nil {
				return "", err
			}
			w.writing.Lock()
			defer w.writing.Unlock()
			data, err := w.readText(p, NotebookEditName)
			if err != nil {
				return "", err
			}
			nb, err := parseNotebook(p, data)
			if err != nil {
				return "", err
			}
			out, msg, err := nb.edit(p, mode, in)
			if err != nil {
				return "", err
			}
			// The edit touched only what it meant to; checking that the
			// result is still a notebook guards the file against a fault here
			// all the same.
			if _, err := parseNotebook(p, out); err != nil {
				return "", fmt.Errorf("the edit would not leave a valid notebook (%w); %q was not changed", err, clip(p))
			}
			if err := w.write(p, out); err != nil {
				return "", pathError(p, err)
			}
			return msg, nil
		},
		tool.WithMetadata(tool.Metadata{Destructive: true}),
		tool.WithTitle("Edit notebook"))
}

// checkNotebookEdit checks the arguments of a notebook_edit call in mode
// before the notebook is read.
func checkNotebookEdit(mode string, in NotebookEditArgs) error {
	switch mode {
	case modeReplace, modeInsert, modeDelete:
	default:
		return fmt.Errorf("edit_mode %q is not one of replace, insert and delete", clipID(in.EditMode))
	}
	switch in.CellType {
	case "", cellCode, cellMarkdown, cellRaw:
	default:
		return fmt.Errorf("cell_type %q is not one of code, markdown and raw", clipID(in.CellType))
	}
	byID, byNumber := in.CellID != "", in.CellNumber != nil
	switch {
	case byID && byNumber:
		return errors.New("both cell_id and cell_number are given; give one of them to pick the cell")
	case byNumber && *in.CellNumber < 0:
		return fmt.Errorf("cell_number %d is negative; cells are numbered from 0", *in.CellNumber)
	case mode != modeInsert && !byID && !byNumber:
		return fmt.Errorf("edit_mode %s needs the cell: give its cell_id or its cell_number (read_file shows both)", mode)
	case mode == modeInsert && in.CellType == "":
		return errors.New("edit_mode insert needs cell_type: code, markdown or raw")
	case mode == modeReplace && in.NewSource == nil && in.CellType == "":
		return errors.New("edit_mode replace needs new_source (the cell's new source), cell_type (its new type) or both")
	}
	return nil
}

// notebook is a Jupyter notebook (nbformat 4) and where its parts lie in
// the file's bytes, so that an edit rewrites only what it changes.
type notebook struct {
	data         []byte // the file's content
	finite       []byte // data as finite leaves it, for json.Unmarshal
	major, minor int
	top          object
	cellList     array
	cells        []nbCell
	indent       string // one level of the file's indentation
	colon        string // what separates a key from its value
	topLayout    layout
	cellsLayout  layout // of the cells list
	memberLayout layout // of a new cell's members
}

// nbCell is one cell of a notebook.
type nbCell struct {
	object
	typ    string // cell_type
	id     string
	hasID  bool
	source string
}

// utf8BOM is the byte order mark of UTF-8.
var utf8BOM = []byte("\ufeff")

// parseNotebook reads data, the content of the notebook p. Its errors name
// p and say what is wrong.
func parseNotebook(p string, data []byte) (*notebook, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%q is not a valid notebook: %s", clip(p), fmt.Sprintf(format, args...))
	}
	// A byte order mark, which some editors write before UTF-8 text, is
	// not JSON: the JSON starts after it, and an edit keeps it.
	body := 0
	if bytes.HasPrefix(data, utf8BOM) {
		body = len(utf8BOM)
	}
	if skipSpace(data, body) == len(data) {
		return nil, invalid("the file is empty")
	}
	// NaN, Infinity and -Infinity, which Jupyter writes for such floats,
	// are checked and decoded as 0 (at the same offsets); the bytes of the
	// file, which edits splice and the rendering shows, keep them.
	fin := data
	if !json.Valid(data[body:]) {
		fin = finite(data, body)
		if !json.Valid(fin[body:]) {
			return nil, invalidJSON(p, data, fin, body)
		}
	}
	start := skipSpace(data, body)
	if data[start] != '{' {
		return nil, invalid("its top level is not a JSON object")
	}
	top, err := parseObject(data, start)
	if err != nil {
		return nil, invalid("%v", err)
	}
	if name, ok := duplicate(top); ok {
		return nil, invalid("the field %q occurs twice at its top level", name)
	}
	nb := &notebook{data: data, finite: fin, top: top}
	field := func(name string) []byte {
		if i := top.find(name); i >= 0 {
			v := top.members[i].value
			return data[v.start:v.end]
		}
		return nil
	}
	format := field("nbformat")
	if format == nil {
		return nil, invalid(`it has no "nbformat" field`)
	}
	if err := json.Unmarshal(format, &nb.major); err != nil {
		return nil, invalid(`its "nbformat" is %s, not an integer`, format)
	}
	if nb.major != 4 {
		return nil, fmt.Errorf("%q is an nbformat %d notebook; only nbformat 4 is supported (Jupyter converts a notebook to it when it saves it)", clip(p), nb.major)
	}
	if minor := field("nbformat_minor"); minor != nil {
		if err := json.Unmarshal(minor, &nb.minor); err != nil {
			return nil, invalid(`its "nbformat_minor" is %s, not an integer`, minor)
		}
	}
	ci := top.find("cells")
	if ci < 0 {
		return nil, invalid(`it has no "cells" list`)
	}
	if v := top.members[ci].value; data[v.start] != '[' {
		return nil, invalid(`its "cells" is not a list`)
	}
	nb.cellList = parseArray(data, top.members[ci].value.start)
	for n, item := range nb.cellList.items {
		c, err := parseCell(data, item)
		if err != nil {
			return nil, invalid("cell %d %v", n, err)
		}
		nb.cells = append(nb.cells, c)
	}

	// The file's layout, for what an edit writes: one level of indentation
	// is the whitespace that starts the top-level members' lines (Jupyter's
	// is one space), and the separator of keys and values is the first
	// member's (Jupyter's is ": ").
	nb.topLayout = layoutOf(data, top.span, top.items(), layout{})
	if nb.topLayout.multiline() {
		nb.indent = strings.TrimLeft(lastLine(nb.topLayout.open), "\r\n")
	}
	first := top.members[0]
	nb.colon = string(data[first.key.end:first.value.start])
	nb.cellsLayout = layoutOf(data, nb.cellList.span, nb.cellList.items, nb.topLayout.child(nb.indent))
	nb.memberLayout = nb.cellsLayout.child(nb.indent)
	if len(nb.cells) > 0 {
		c := nb.cells[0]
		nb.memberLayout = layoutOf(data, c.span, c.items(), nb.memberLayout)
		m := c.members[0]
		nb.colon = string(data[m.key.end:m.value.start])
	}
	return nb, nil
}

// invalidJSON is the error of the notebook p whose content data is not
// JSON, fin being data as finite leaves it (from body on): it says where
// the first fault is. A NaN, Infinity or -Infinity is named as itself
// where it may not stand, rather than as the 0 it was checked as.
func invalidJSON(p string, data, fin []byte, body int) error {
	var v json.RawMessage
	err := json.Unmarshal(fin[body:], &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("%q is not a valid notebook: invalid JSON: %w", clip(p), err)
	}
	// Offset counts the bytes read, the offending one included.
	off := min(body+int(se.Offset), len(data))
	msg := err.Error()
	if at := off - 1; at >= body && fin[at] != data[at] {
		if w := nonFiniteWord(data, at); w != "" {
			msg = strings.Replace(msg, "invalid character '0'", "unexpected "+w, 1)
		}
	}
	return fmt.Errorf("%q is not a valid notebook: invalid JSON at line %d (byte %d): %s", clip(p), 1+bytes.Count(data[:off], []byte("\n")), off, msg)
}

// parseCell reads the cell at item; its errors complete "cell N".
func parseCell(data []byte, item span) (nbCell, error) {
	if data[item.start] != '{' {
		return nbCell{}, errors.New("is not a JSON object")
	}
	obj, err := parseObject(data, item.start)
	if err != nil {
		return nbCell{}, err
	}
	if name, ok := duplicate(obj); ok {
		return nbCell{}, fmt.Errorf("has the field %q twice", clipID(name))
	}
	c := nbCell{object: obj}
	value := func(name string) []byte {
		if i := obj.find(name); i >= 0 {
			v := obj.members[i].value
			return data[v.start:v.end]
		}
		return nil
	}
	raw := value("cell_type")
	if raw == nil {
		return nbCell{}, errors.New(`has no "cell_type"`)
	}
	if raw[0] != '"' {
		return nbCell{}, fmt.Errorf(`has the "cell_type" %s, not a string`, raw)
	}
	if c.typ, err = decodeString(raw); err != nil {
		return nbCell{}, err
	}
	if raw := value("id"); raw != nil {
		if raw[0] != '"' {
			return nbCell{}, fmt.Errorf(`has the "id" %s, not a string`, raw)
		}
		if c.id, err = decodeString(raw); err != nil {
			return nbCell{}, err
		}
		c.hasID = true
	}
	if raw := value("source"); raw != nil {
		var ok bool
		if c.source, ok = decodeText(raw); !ok {
			return nbCell{}, errors.New(`has a "source" that is neither a string nor a list of strings`)
		}
	}
	return c, nil
}

// duplicate returns a key that occurs twice in o, if one does: which of
// the two an edit should change, and which other programs read, is
// unclear.
func duplicate(o object) (string, bool) {
	seen := make(map[string]bool, len(o.members))
	for _, m := range o.members {
		if seen[m.name] {
			return m.name, true
		}
		seen[m.name] = true
	}
	return "", false
}

// decodeText decodes a multi-line text of nbformat: a string, or a list of
// strings to be joined (null is empty).
func decodeText(raw []byte) (string, bool) {
	switch raw[0] {
	case '"':
		s, err := decodeString(raw)
		return s, err == nil
	case '[':
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return "", false
		}
		return strings.Join(list, ""), true
	case 'n':
		return "", true
	}
	return "", false
}

// sourceLines splits s into lines the way nbformat stores a cell's source
// (with Python's str.splitlines): each line keeps its line break, and an
// empty source has no lines. The breaks are those of Python: \n, \r\n and
// \r, and \v, \f, \x1c, \x1d, \x1e, U+0085, U+2028 and U+2029, so that a
// cell written here is the one Jupyter would write. The lines come as JSON
// strings.
func sourceLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch r {
		case '\r':
			if i < len(s) && s[i] == '\n' {
				i++
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		default:
			continue
		}
		lines = append(lines, quote(s[start:i]))
		start = i
	}
	if start < len(s) {
		lines = append(lines, quote(s[start:]))
	}
	return lines
}

// value returns the bytes of the member name of cell c, or nil.
func (nb *notebook) value(c nbCell, name string) []byte {
	if i := c.find(name); i >= 0 {
		v := c.members[i].value
		return nb.data[v.start:v.end]
	}
	return nil
}

// finiteValue returns the member name of cell c as finite leaves it, for
// json.Unmarshal, or nil. What is decoded from it must not be shown where
// it may be a number: a NaN reads there as 0.
func (nb *notebook) finiteValue(c nbCell, name string) []byte {
	if i := c.find(name); i >= 0 {
		v := c.members[i].value
		return nb.finite[v.start:v.end]
	}
	return nil
}

// describe names cell n for messages: `cell 3 (id "intro")`.
func (nb *notebook) describe(n int) string {
	c := nb.cells[n]
	if c.hasID {
		return fmt.Sprintf("cell %d (id %q)", n, clipID(c.id))
	}
	return fmt.Sprintf("cell %d", n)
}

// edit makes the edit in of mode and returns the notebook's new content
// and what was done. The arguments passed checkNotebookEdit.
func (nb *notebook) edit(p, mode string, in NotebookEditArgs) ([]byte, string, error) {
	at := -1
	if in.CellID != "" || in.CellNumber != nil {
		var err error
		if at, err = nb.pick(p, in.CellID, in.CellNumber); err != nil {
			return nil, "", err
		}
	}
	switch mode {
	case modeInsert:
		source := ""
		if in.NewSource != nil {
			source = *in.NewSource
		}
		id := ""
		if nb.minor >= 5 {
			id = nb.newID()
		}
		out := nb.insert(at+1, in.CellType, source, id)
		msg := fmt.Sprintf("Inserted %s cell %d", in.CellType, at+1)
		if id != "" {
			msg += fmt.Sprintf(" (id %q)", id)
		}
		msg += fmt.Sprintf(" into %q", p)
		if at < 0 {
			msg += ", at the start"
		} else {
			msg += ", after " + nb.describe(at)
		}
		msg += fmt.Sprintf("; it has %s now", plural(len(nb.cells)+1, "cell"))
		if at+1 < len(nb.cells) {
			msg += ", and the cells after the new one are numbered one higher than before"
		}
		return out, msg + ".", nil
	case modeDelete:
		out := nb.delete(at)
		msg := fmt.Sprintf("Deleted %s %s from %q; %s left", nb.cells[at].typ, nb.describe(at), p, plural(len(nb.cells)-1, "cell"))
		if at < len(nb.cells)-1 {
			msg += ", the ones after it numbered one lower than before"
		}
		return out, msg + ".", nil
	}
	return nb.replace(p, at, in.NewSource, in.CellType)
}

// pick returns the index of the cell with the id, or numbered number.
func (nb *notebook) pick(p, id string, number *int) (int, error) {
	if number != nil {
		n := *number
		switch {
		case len(nb.cells) == 0:
			return 0, fmt.Errorf("cell_number %d does not exist: %q has no cells (insert one without cell_id and cell_number)", n, clip(p))
		case n >= len(nb.cells):
			return 0, fmt.Errorf("cell_number %d does not exist: %q has %s, numbered 0 to %d", n, clip(p), plural(len(nb.cells), "cell"), len(nb.cells)-1)
		}
		return n, nil
	}
	var found []int
	for i, c := range nb.cells {
		if c.hasID && c.id == id {
			found = append(found, i)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return 0, nb.noSuchID(p, id)
	}
	return 0, fmt.Errorf("cell_id %q is the id of %s of %q; pick one of them with cell_number", clipID(id), joinCells(found), clip(p))
}

// joinCells writes cell numbers for a message: "cells 2, 5 and 7".
func joinCells(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 1 {
		return "cell " + s[0]
	}
	return "cells " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// maxIDsListed is how many cell ids the error of an unknown id lists.
const maxIDsListed = 20

// noSuchID is the error of a cell_id that no cell of the notebook p has: it
// says which ids there are, the likely ones first.
func (nb *notebook) noSuchID(p, id string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cell_id %q matches no cell of %q", clipID(id), clip(p))
	if _, err := strconv.Atoi(id); err == nil {
		b.WriteString(" (to pick a cell by its position, give cell_number instead)")
	}
	var ids, near []string
	for i, c := range nb.cells {
		if !c.hasID {
			continue
		}
		entry := fmt.Sprintf("%q (cell %d)", clipID(c.id), i)
		ids = append(ids, entry)
		lc, lid := strings.ToLower(c.id), strings.ToLower(id)
		if c.id != "" && (strings.HasPrefix(lc, lid) || strings.HasPrefix(lid, lc)) {
			near = append(near, entry)
		}
	}
	switch {
	case len(nb.cells) == 0:
		b.WriteString(": it has no cells.")
	case len(ids) == 0:
		fmt.Fprintf(&b, ": its cells have no ids (nbformat 4.%d); pick one with cell_number, 0 to %d.", nb.minor, len(nb.cells)-1)
	default:
		b.WriteString(".")
		if len(near) > 0 && len(near) <= maxIDsListed {
			fmt.Fprintf(&b, " Did you mean %s?", strings.Join(near, " or "))
		}
		b.WriteString(" The ids of its cells are ")
		b.WriteString(strings.Join(ids[:min(len(ids), maxIDsListed)], ", "))
		if len(ids) > maxIDsListed {
			fmt.Fprintf(&b, " and %d more (read_file shows them all)", len(ids)-maxIDsListed)
		}
		if len(ids) < len(nb.cells) {
			fmt.Fprintf(&b, "; %d of its %d cells have none", len(nb.cells)-len(ids), len(nb.cells))
		}
		b.WriteString(".")
	}
	return errors.New(b.String())
}

// newID returns a cell id no cell of the notebook has: eight hexadecimal
// digits, as Jupyter makes them (nbformat allows 1 to 64 of [a-zA-Z0-9-_]).
func (nb *notebook) newID() string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		if !slices.ContainsFunc(nb.cells, func(c nbCell) bool { return c.hasID && c.id == id }) {
			return id
		}
	}
}

// splice returns d with s replaced by repl.
func splice(d []byte, s span, repl []byte) []byte {
	out := make([]byte, 0, len(d)-(s.end-s.start)+len(repl))
	out = append(out, d[:s.start]...)
	out = append(out, repl...)
	return append(out, d[s.end:]...)
}

// insert returns the notebook with a new cell of the type, source and id
// (none when empty) at position at, the key order and layout Jupyter's.
func (nb *notebook) insert(at int, typ, source, id string) []byte {
	colon := nb.colon
	members := []string{quote("cell_type") + colon + quote(typ)}
	if typ == cellCode {
		members = append(members, quote("execution_count")+colon+"null")
	}
	if id != "" {
		members = append(members, quote("id")+colon+quote(id))
	}
	members = append(members, quote("metadata")+colon+"{}")
	if typ == cellCode {
		members = append(members, quote("outputs")+colon+"[]")
	}
	members = append(members, quote("source")+colon+string(appendList(nil, sourceLines(source), nb.memberLayout.child(nb.indent))))
	cell := appendContainer(nil, '{', '}', members, nb.memberLayout)

	items := nb.cellList.items
	switch {
	case len(items) == 0:
		return splice(nb.data, nb.cellList.span, appendList(nil, []string{string(cell)}, nb.cellsLayout))
	case at < len(items):
		// Before the cell now at the position: the whitespace before that
		// cell stays in front of the new one.
		repl := append(cell, ',')
		repl = append(repl, nb.cellsLayout.sep...)
		return splice(nb.data, span{items[at].start, items[at].start}, repl)
	}
	repl := append([]byte{','}, nb.cellsLayout.sep...)
	repl = append(repl, cell...)
	end := items[len(items)-1].end
	return splice(nb.data, span{end, end}, repl)
}

// delete returns the notebook without cell i, and without the comma and
// whitespace that separated it from its neighbour.
func (nb *notebook) delete(i int) []byte {
	items := nb.cellList.items
	switch {
	case len(items) == 1:
		return splice(nb.data, nb.cellList.span, []byte("[]"))
	case i < len(items)-1:
		return splice(nb.data, span{items[i].start, items[i+1].start}, nil)
	}
	return splice(nb.data, span{items[i-1].end, items[i].end}, nil)
}

// replace returns the notebook with the source of cell i replaced (unless
// source is nil) and its type changed (unless typ is empty or its type),
// and what was done. A changed code cell loses its outputs, which no longer
// match its source; a change of type adds and removes the fields nbformat
// requires and allows for each type. The cell's other fields stay as they
// were, in their order.
func (nb *notebook) replace(p string, i int, source *string, typ string) ([]byte, string, error) {
	c := nb.cells[i]
	d := nb.data
	oldType, newType := c.typ, c.typ
	if typ != "" {
		newType = typ
	}
	changedSource := source != nil && *source != c.source
	if !changedSource && newType == oldType {
		what := "source"
		if source == nil {
			what = "type"
		} else if typ != "" {
			what = "source and type"
		}
		return nil, "", fmt.Errorf("%s of %q already has this %s; it was not changed", nb.describe(i), clip(p), what)
	}
	lay := layoutOf(d, c.span, c.items(), nb.memberLayout)
	m0 := c.members[0]
	colon := string(d[m0.key.end:m0.value.start])

	set := map[string]string{} // the members to set, to their new values
	drop := map[string]bool{}  // the members to remove
	var notes []string
	if changedSource {
		set["source"] = string(appendList(nil, sourceLines(*source), lay.child(nb.indent)))
	}
	if newType != oldType {
		set["cell_type"] = quote(newType)
	}
	switch {
	case newType == cellCode && (oldType != cellCode || changedSource):
		// What a code cell needs, empty: it has not run since.
		set["outputs"] = "[]"
		set["execution_count"] = "null"
		if oldType == cellCode {
			notes = append(notes, "its outputs and execution count were cleared, as they no longer match it")
		}
		if oldType != cellCode && c.find("attachments") >= 0 {
			// nbformat allows attachments on markdown and raw cells only.
			drop["attachments"] = true
			notes = append(notes, "its attachments were removed, as code cells have none")
		}
	case newType != cellCode && oldType == cellCode:
		drop["outputs"] = true
		drop["execution_count"] = true
		notes = append(notes, "its outputs and execution count were removed, as "+newType+" cells have none")
	}

	// The new members go where they sort among the others when the cell's
	// keys are sorted, as Jupyter sorts them, and after the others when
	// they are not.
	sorted := slices.IsSortedFunc(c.members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	var added []string
	for name := range set {
		if c.find(name) < 0 {
			added = append(added, name)
		}
	}
	slices.Sort(added)
	var members []string
	for _, m := range c.members {
		if drop[m.name] {
			continue
		}
		for sorted && len(added) > 0 && added[0] < m.name {
			members = append(members, quote(added[0])+colon+set[added[0]])
			added = added[1:]
		}
		if v, ok := set[m.name]; ok {
			members = append(members, string(d[m.key.start:m.value.start])+v)
		} else {
			members = append(members, string(d[m.key.start:m.value.end]))
		}
	}
	for _, name := range added {
		members = append(members, quote(name)+colon+set[name])
	}
	out := splice(d, c.span, appendContainer(nil, '{', '}', members, lay))

	var msg string
	switch {
	case newType == oldType:
		msg = fmt.Sprintf("Replaced the source of %s %s of %q", oldType, nb.describe(i), p)
	case changedSource:
		msg = fmt.Sprintf("Replaced the source of %s of %q and changed its type from %s to %s", nb.describe(i), p, oldType, newType)
	default:
		msg = fmt.Sprintf("Changed the type of %s of %q from %s to %s", nb.describe(i), p, oldType, newType)
	}
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
	}
	return out, msg + ".", nil
}
