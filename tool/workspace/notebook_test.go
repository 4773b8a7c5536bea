package workspace_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/workspace"
)

// testdata/jupyter.ipynb is a notebook as Jupyter writes it (keys sorted,
// one space of indentation, UTF-8 unescaped, a final line break), with
// outputs of each kind, an attachment, unicode, <, > and &, a raw U+2028,
// and fields nbformat does not define at the top level, in the metadata and
// in a cell. The other files there are what Jupyter writes for the same
// notebook after the edits of TestNotebookEditWritesWhatJupyterWrites.

// fixture returns the content of the file name of testdata.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

// The cells of testdata/jupyter.ipynb, by number.
var fixtureIDs = []string{"intro", "load-data", "plot_1", "raw0", "notes"}

// jupyterID is nbformat's rule for a cell id.
var jupyterID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// cellIDs returns the ids of the notebook's cells ("" for a cell without
// one), and checks it is valid JSON.
func cellIDs(t *testing.T, content string) []string {
	t.Helper()
	var nb struct {
		Cells []struct {
			ID *string `json:"id"`
		} `json:"cells"`
	}
	require.NoError(t, json.Unmarshal([]byte(content), &nb), content)
	ids := make([]string, len(nb.Cells))
	for i, c := range nb.Cells {
		if c.ID != nil {
			ids[i] = *c.ID
		}
	}
	return ids
}

func TestNotebookEditWritesWhatJupyterWrites(t *testing.T) {
	original := fixture(t, "jupyter.ipynb")
	newSource := "import pandas as pd\ndf = pd.read_csv(\"<b> & é\t\u2028.csv\")\n"
	tests := []struct {
		name   string
		args   args // with the cell picked by "cell"
		cell   int  // the cell to pick, -1 for none
		golden string
		want   string // the result, %s standing for how the cell was named
	}{
		{
			name:   "replace a code cell's source",
			args:   args{"new_source": newSource},
			cell:   1,
			golden: "jupyter-replaced.ipynb",
			want:   `Replaced the source of code cell 1 (id "load-data") of "nb.ipynb"; its outputs and execution count were cleared, as they no longer match it.`,
		},
		{
			name:   "markdown to code",
			args:   args{"new_source": "print('notes')", "cell_type": "code", "edit_mode": "replace"},
			cell:   4,
			golden: "jupyter-to-code.ipynb",
			want:   `Replaced the source of cell 4 (id "notes") of "nb.ipynb" and changed its type from markdown to code; its attachments were removed, as code cells have none.`,
		},
		{
			name:   "code to markdown, source kept",
			args:   args{"cell_type": "markdown"},
			cell:   2,
			golden: "jupyter-to-markdown.ipynb",
			want:   `Changed the type of cell 2 (id "plot_1") of "nb.ipynb" from code to markdown; its outputs and execution count were removed, as markdown cells have none.`,
		},
		{
			name:   "insert after a cell",
			args:   args{"edit_mode": "insert", "cell_type": "code", "new_source": "x = 1\ny = 2\n"},
			cell:   1,
			golden: "jupyter-inserted.ipynb",
			want:   `Inserted code cell 2 (id "NEWID") into "nb.ipynb", after cell 1 (id "load-data"); it has 6 cells now, and the cells after the new one are numbered one higher than before.`,
		},
		{
			name:   "delete",
			args:   args{"edit_mode": "delete"},
			cell:   2,
			golden: "jupyter-deleted.ipynb",
			want:   `Deleted code cell 2 (id "plot_1") from "nb.ipynb"; 4 cells left, the ones after it numbered one lower than before.`,
		},
	}
	for _, tt := range tests {
		for _, by := range []string{"cell_id", "cell_number"} {
			t.Run(tt.name+" by "+by, func(t *testing.T) {
				ws, dir := open(t, map[string]string{"nb.ipynb": original})
				a := args{"path": "nb.ipynb"}
				for k, v := range tt.args {
					a[k] = v
				}
				if by == "cell_id" {
					a["cell_id"] = fixtureIDs[tt.cell]
				} else {
					a["cell_number"] = tt.cell
				}
				got := succeed(t, ws, workspace.NotebookEditName, a)
				after := read(t, dir, "nb.ipynb")
				if strings.Contains(tt.golden, "inserted") {
					// The new cell's id is random: check it, then put the
					// golden file's in its place.
					id := cellIDs(t, after)[tt.cell+1]
					assert.Regexp(t, jupyterID, id)
					assert.NotContains(t, fixtureIDs, id)
					assert.Len(t, id, 8, "eight hexadecimal digits, as Jupyter makes them")
					after = strings.Replace(after, `"id": "`+id+`"`, `"id": "NEWID"`, 1)
					got = strings.Replace(got, id, "NEWID", 1)
				}
				assert.Equal(t, tt.want, got)
				assert.Equal(t, fixture(t, tt.golden), after, "byte for byte what Jupyter writes")
			})
		}
	}
}

func TestNotebookEditKeepsEveryOtherByte(t *testing.T) {
	original := fixture(t, "jupyter.ipynb")
	ws, dir := open(t, map[string]string{"nb.ipynb": original})
	succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_id": "raw0", "new_source": "changed"})
	after := read(t, dir, "nb.ipynb")

	// Cell 3 lies between the end of cell 2 and the start of cell 4: all
	// before and after it is as it was.
	start := strings.Index(original, "  {\n   \"cell_type\": \"raw\"")
	end := strings.Index(original, "  {\n   \"attachments\"")
	require.True(t, start > 0 && end > start)
	assert.Equal(t, original[:start], after[:start])
	assert.Equal(t, original[end:], after[len(after)-(len(original)-end):])
	assert.Equal(t, "  {\n   \"cell_type\": \"raw\",\n   \"id\": \"raw0\",\n   \"metadata\": {\n    \"format\": \"text/restructuredtext\"\n   },\n   \"source\": [\n    \"changed\"\n   ],\n   \"x_unknown\": {\n    \"kept\": true\n   }\n  },\n",
		after[start:len(after)-(len(original)-end)], "only the source changed, into nbformat's list of lines; the unknown field stayed")
}

func TestNotebookEditKeepsTheFilesLayout(t *testing.T) {
	tests := []struct {
		name, before, after string
		args                args
	}{
		{
			name:   "compact, a string source",
			before: `{"cells":[{"cell_type":"code","execution_count":3,"metadata":{},"outputs":[{"output_type":"stream","name":"stdout","text":"hi"}],"source":"print('hi')"}],"metadata":{},"nbformat":4,"nbformat_minor":4}`,
			args:   args{"cell_number": 0, "new_source": "print('bye')\nx"},
			after:  `{"cells":[{"cell_type":"code","execution_count":null,"metadata":{},"outputs":[],"source":["print('bye')\n","x"]}],"metadata":{},"nbformat":4,"nbformat_minor":4}`,
		},
		{
			name:   "compact, insert at the end",
			before: `{"cells":[{"cell_type":"raw","metadata":{},"source":[]}],"nbformat":4,"nbformat_minor":4}`,
			args:   args{"cell_number": 0, "edit_mode": "insert", "cell_type": "markdown", "new_source": "# T"},
			after:  `{"cells":[{"cell_type":"raw","metadata":{},"source":[]},{"cell_type":"markdown","metadata":{},"source":["# T"]}],"nbformat":4,"nbformat_minor":4}`,
		},
		{
			name:   "Python's default separators",
			before: `{"cells": [{"cell_type": "raw", "metadata": {}, "source": "a"}], "nbformat": 4, "nbformat_minor": 4}`,
			args:   args{"edit_mode": "insert", "cell_type": "code"},
			after:  `{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": []}, {"cell_type": "raw", "metadata": {}, "source": "a"}], "nbformat": 4, "nbformat_minor": 4}`,
		},
		{
			name:   "two spaces and CRLF, into an empty list",
			before: "{\r\n  \"cells\": [],\r\n  \"nbformat\": 4,\r\n  \"nbformat_minor\": 4\r\n}",
			args:   args{"edit_mode": "insert", "cell_type": "markdown", "new_source": "a\nb"},
			after:  "{\r\n  \"cells\": [\r\n    {\r\n      \"cell_type\": \"markdown\",\r\n      \"metadata\": {},\r\n      \"source\": [\r\n        \"a\\n\",\r\n        \"b\"\r\n      ]\r\n    }\r\n  ],\r\n  \"nbformat\": 4,\r\n  \"nbformat_minor\": 4\r\n}",
		},
		{
			name:   "tabs, unsorted keys",
			before: "{\n\t\"nbformat\": 4,\n\t\"nbformat_minor\": 4,\n\t\"cells\": [\n\t\t{\n\t\t\t\"source\": \"x\",\n\t\t\t\"cell_type\": \"markdown\",\n\t\t\t\"metadata\": {}\n\t\t}\n\t]\n}\n",
			args:   args{"cell_number": 0, "cell_type": "code"},
			after:  "{\n\t\"nbformat\": 4,\n\t\"nbformat_minor\": 4,\n\t\"cells\": [\n\t\t{\n\t\t\t\"source\": \"x\",\n\t\t\t\"cell_type\": \"code\",\n\t\t\t\"metadata\": {},\n\t\t\t\"execution_count\": null,\n\t\t\t\"outputs\": []\n\t\t}\n\t]\n}\n",
		},
		{
			name:   "delete the only cell",
			before: "{\n \"cells\": [\n  {\n   \"cell_type\": \"raw\",\n   \"metadata\": {},\n   \"source\": []\n  }\n ],\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n",
			args:   args{"cell_number": 0, "edit_mode": "delete"},
			after:  "{\n \"cells\": [],\n \"nbformat\": 4,\n \"nbformat_minor\": 4\n}\n",
		},
		{
			name:   "delete the last cell",
			before: `{"cells":[{"cell_type":"raw","metadata":{},"source":"1"},{"cell_type":"raw","metadata":{},"source":"2"}],"nbformat":4,"nbformat_minor":4}`,
			args:   args{"cell_number": 1, "edit_mode": "delete"},
			after:  `{"cells":[{"cell_type":"raw","metadata":{},"source":"1"}],"nbformat":4,"nbformat_minor":4}`,
		},
		{
			name:   "escaped keys and control characters",
			before: `{"cells":[{"cell_typ\u0065":"raw","metadata":{},"\u0073ource":"old"}],"nbformat":4,"nbformat_minor":4}`,
			args:   args{"cell_number": 0, "new_source": "tab\tbell\u0007 quote\" back\\ </script> \u2029"},
			after:  `{"cells":[{"cell_typ\u0065":"raw","metadata":{},"\u0073ource":["tab\tbell\u0007 quote\" back\\ </script> ` + "\u2029" + `"]}],"nbformat":4,"nbformat_minor":4}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := open(t, map[string]string{"nb.ipynb": tt.before})
			a := args{"path": "nb.ipynb"}
			for k, v := range tt.args {
				a[k] = v
			}
			succeed(t, ws, workspace.NotebookEditName, a)
			assert.Equal(t, tt.after, read(t, dir, "nb.ipynb"))
		})
	}
}

// notebook returns an nbformat 4.minor notebook of n markdown cells, with
// ids "c0", "c1"... when withIDs.
func notebook(minor, n int, withIDs bool) string {
	cells := make([]string, n)
	for i := range cells {
		id := ""
		if withIDs {
			id = fmt.Sprintf(",\n   \"id\": \"c%d\"", i)
		}
		cells[i] = fmt.Sprintf("  {\n   \"cell_type\": \"markdown\"%s,\n   \"metadata\": {},\n   \"source\": [\n    \"cell %d\"\n   ]\n  }", id, i)
	}
	list := "[]"
	if n > 0 {
		list = "[\n" + strings.Join(cells, ",\n") + "\n ]"
	}
	return fmt.Sprintf("{\n \"cells\": %s,\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": %d\n}\n", list, minor)
}

func TestNotebookEditInsert(t *testing.T) {
	t.Run("ids from nbformat 4.5 on", func(t *testing.T) {
		for minor, wantID := range map[int]bool{4: false, 5: true, 6: true} {
			ws, dir := open(t, map[string]string{"nb.ipynb": notebook(minor, 2, minor >= 5)})
			out := succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "edit_mode": "insert", "cell_type": "raw", "new_source": "r"})
			ids := cellIDs(t, read(t, dir, "nb.ipynb"))
			require.Len(t, ids, 3)
			if !wantID {
				assert.Equal(t, []string{"", "", ""}, ids, "4.%d: no ids", minor)
				assert.Equal(t, `Inserted raw cell 0 into "nb.ipynb", at the start; it has 3 cells now, and the cells after the new one are numbered one higher than before.`, out)
				assert.NotContains(t, read(t, dir, "nb.ipynb"), `"id"`)
				continue
			}
			assert.Regexp(t, jupyterID, ids[0], "4.%d", minor)
			assert.Equal(t, []string{"c0", "c1"}, ids[1:])
			assert.Contains(t, out, fmt.Sprintf(`Inserted raw cell 0 (id %q) into "nb.ipynb", at the start`, ids[0]))
		}
	})

	t.Run("positions", func(t *testing.T) {
		ws, dir := open(t, map[string]string{"nb.ipynb": notebook(5, 2, true)})
		succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "edit_mode": "insert", "cell_type": "code", "cell_id": "c1", "new_source": "last"})
		succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "edit_mode": "insert", "cell_type": "code", "cell_number": 0, "new_source": "second"})
		out := succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "edit_mode": "insert", "cell_type": "markdown"})
		assert.Contains(t, out, "it has 5 cells now")
		ids := cellIDs(t, read(t, dir, "nb.ipynb"))
		require.Len(t, ids, 5)
		assert.Equal(t, []string{"c0", "c1"}, []string{ids[1], ids[3]})
		seen := map[string]bool{}
		for _, id := range ids {
			assert.False(t, seen[id], "ids are unique: %v", ids)
			seen[id] = true
		}
		view := succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"})
		assert.Contains(t, view, fmt.Sprintf("[cell 0] markdown, id %q\n  (empty)\n\n[cell 1] markdown, id \"c0\"\n     1\tcell 0\n\n[cell 2] code, id %q\n     1\tsecond\n\n[cell 3] markdown, id \"c1\"\n     1\tcell 1\n\n[cell 4] code, id %q\n     1\tlast", ids[0], ids[2], ids[4]))
	})

	t.Run("into an empty notebook", func(t *testing.T) {
		ws, dir := open(t, map[string]string{"nb.ipynb": notebook(4, 0, false)})
		out := succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "edit_mode": "insert", "cell_type": "markdown", "new_source": "cell 0"})
		assert.Equal(t, `Inserted markdown cell 0 into "nb.ipynb", at the start; it has 1 cell now.`, out)
		assert.Equal(t, notebook(4, 1, false), read(t, dir, "nb.ipynb"), "laid out as Jupyter lays it out")
	})
}

func TestNotebookEditClearsOutputs(t *testing.T) {
	// A code cell's outputs go when its source changes, whether it is
	// replaced as code or becomes code; they stay when nothing asked for
	// the source.
	const nb = `{"cells":[{"cell_type":"code","execution_count":7,"id":"a","metadata":{"tags":["x"]},"outputs":[{"output_type":"stream","name":"stdout","text":"7\n"}],"source":"print(7)"},` +
		`{"cell_type":"raw","id":"b","metadata":{},"source":"b"}],"metadata":{},"nbformat":4,"nbformat_minor":5}`
	ws, dir := open(t, map[string]string{"nb.ipynb": nb})
	succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_id": "a", "new_source": "print(8)"})
	assert.Equal(t, strings.Replace(nb, `"execution_count":7,"id":"a","metadata":{"tags":["x"]},"outputs":[{"output_type":"stream","name":"stdout","text":"7\n"}],"source":"print(7)"`,
		`"execution_count":null,"id":"a","metadata":{"tags":["x"]},"outputs":[],"source":["print(8)"]`, 1), read(t, dir, "nb.ipynb"))

	succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_id": "b", "cell_type": "code"})
	assert.Contains(t, read(t, dir, "nb.ipynb"), `{"cell_type":"code","execution_count":null,"id":"b","metadata":{},"outputs":[],"source":"b"}`)
}

func TestNotebookEditFailuresWriteNothing(t *testing.T) {
	good := fixture(t, "jupyter.ipynb")
	files := map[string]string{
		"nb.ipynb":         good,
		"old.ipynb":        notebook(4, 3, false),
		"empty-list.ipynb": notebook(5, 0, false),
		"twins.ipynb":      strings.Replace(notebook(5, 3, true), `"id": "c2"`, `"id": "c0"`, 1),
		"many.ipynb":       notebook(5, 25, true),
		"broken.ipynb":     "{\n \"cells\": [\n  {]\n}\n",
		"empty.ipynb":      "",
		"list.ipynb":       "[]",
		"nocells.ipynb":    `{"metadata": {}, "nbformat": 4, "nbformat_minor": 5}`,
		"cellsobj.ipynb":   `{"cells": {}, "nbformat": 4, "nbformat_minor": 5}`,
		"v3.ipynb":         `{"worksheets": [{"cells": []}], "metadata": {}, "nbformat": 3, "nbformat_minor": 0}`,
		"v5.ipynb":         `{"cells": [], "nbformat": 5, "nbformat_minor": 0}`,
		"noformat.ipynb":   `{"cells": []}`,
		"floatfmt.ipynb":   `{"cells": [], "nbformat": 4.0}`,
		"badminor.ipynb":   `{"cells": [], "nbformat": 4, "nbformat_minor": "5"}`,
		"cellnum.ipynb":    `{"cells": [1], "nbformat": 4, "nbformat_minor": 4}`,
		"notype.ipynb":     `{"cells": [{"metadata": {}, "source": ""}], "nbformat": 4, "nbformat_minor": 4}`,
		"numtype.ipynb":    `{"cells": [{"cell_type": 1, "source": ""}], "nbformat": 4, "nbformat_minor": 4}`,
		"badsource.ipynb":  `{"cells": [{"cell_type": "code", "source": 42}], "nbformat": 4, "nbformat_minor": 4}`,
		"badid.ipynb":      `{"cells": [{"cell_type": "code", "id": 3, "source": ""}], "nbformat": 4, "nbformat_minor": 5}`,
		"twokeys.ipynb":    `{"cells": [{"cell_type": "code", "source": "a", "source": "b"}], "nbformat": 4, "nbformat_minor": 4}`,
		"twocells.ipynb":   `{"cells": [], "cells": [], "nbformat": 4, "nbformat_minor": 4}`,
		"notes.txt":        "not a notebook\n",
		"dir.ipynb/x":      "",
	}
	ws, dir := open(t, files)
	small, smallDir := open(t, map[string]string{"nb.ipynb": good}, workspace.WithMaxFileSize(1024))

	tests := []struct {
		name string
		args args
		want string
	}{
		{"invalid JSON", args{"path": "broken.ipynb", "cell_number": 0, "new_source": "x"}, `"broken.ipynb" is not a valid notebook: invalid JSON at line 3 (byte 18): invalid character ']' looking for beginning of object key string`},
		{"an empty file", args{"path": "empty.ipynb", "cell_number": 0, "new_source": "x"}, `"empty.ipynb" is not a valid notebook: the file is empty`},
		{"not an object", args{"path": "list.ipynb", "cell_number": 0, "new_source": "x"}, `"list.ipynb" is not a valid notebook: its top level is not a JSON object`},
		{"no cells", args{"path": "nocells.ipynb", "cell_number": 0, "new_source": "x"}, `"nocells.ipynb" is not a valid notebook: it has no "cells" list`},
		{"cells not a list", args{"path": "cellsobj.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"cellsobj.ipynb" is not a valid notebook: its "cells" is not a list`},
		{"nbformat 3", args{"path": "v3.ipynb", "cell_number": 0, "new_source": "x"}, `"v3.ipynb" is an nbformat 3 notebook; only nbformat 4 is supported (Jupyter converts a notebook to it when it saves it)`},
		{"nbformat 5", args{"path": "v5.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"v5.ipynb" is an nbformat 5 notebook; only nbformat 4 is supported`},
		{"no nbformat", args{"path": "noformat.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"noformat.ipynb" is not a valid notebook: it has no "nbformat" field`},
		{"nbformat not an integer", args{"path": "floatfmt.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"floatfmt.ipynb" is not a valid notebook: its "nbformat" is 4.0, not an integer`},
		{"nbformat_minor not an integer", args{"path": "badminor.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"badminor.ipynb" is not a valid notebook: its "nbformat_minor" is "5", not an integer`},
		{"a cell not an object", args{"path": "cellnum.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"cellnum.ipynb" is not a valid notebook: cell 0 is not a JSON object`},
		{"a cell without a type", args{"path": "notype.ipynb", "cell_number": 0, "new_source": "x"}, `"notype.ipynb" is not a valid notebook: cell 0 has no "cell_type"`},
		{"a cell type not a string", args{"path": "numtype.ipynb", "cell_number": 0, "new_source": "x"}, `"numtype.ipynb" is not a valid notebook: cell 0 has the "cell_type" 1, not a string`},
		{"a bad source", args{"path": "badsource.ipynb", "cell_number": 0, "new_source": "x"}, `"badsource.ipynb" is not a valid notebook: cell 0 has a "source" that is neither a string nor a list of strings`},
		{"an id not a string", args{"path": "badid.ipynb", "cell_number": 0, "new_source": "x"}, `"badid.ipynb" is not a valid notebook: cell 0 has the "id" 3, not a string`},
		{"a key twice in a cell", args{"path": "twokeys.ipynb", "cell_number": 0, "new_source": "x"}, `"twokeys.ipynb" is not a valid notebook: cell 0 has the field "source" twice`},
		{"a key twice at the top", args{"path": "twocells.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"twocells.ipynb" is not a valid notebook: the field "cells" occurs twice at its top level`},

		{"an unknown id", args{"path": "nb.ipynb", "cell_id": "load", "new_source": "x"}, `cell_id "load" matches no cell of "nb.ipynb". Did you mean "load-data" (cell 1)? The ids of its cells are "intro" (cell 0), "load-data" (cell 1), "plot_1" (cell 2), "raw0" (cell 3), "notes" (cell 4).`},
		{"a number as an id", args{"path": "nb.ipynb", "cell_id": "3", "edit_mode": "delete"}, `cell_id "3" matches no cell of "nb.ipynb" (to pick a cell by its position, give cell_number instead). The ids of its cells are "intro" (cell 0),`},
		{"many ids", args{"path": "many.ipynb", "cell_id": "zz", "edit_mode": "delete"}, `"c18" (cell 18), "c19" (cell 19) and 5 more (read_file shows them all).`},
		{"an id in a notebook without ids", args{"path": "old.ipynb", "cell_id": "c0", "new_source": "x"}, `cell_id "c0" matches no cell of "old.ipynb": its cells have no ids (nbformat 4.4); pick one with cell_number, 0 to 2.`},
		{"an id in an empty notebook", args{"path": "empty-list.ipynb", "cell_id": "c0", "edit_mode": "delete"}, `cell_id "c0" matches no cell of "empty-list.ipynb": it has no cells.`},
		{"an id two cells have", args{"path": "twins.ipynb", "cell_id": "c0", "new_source": "x"}, `cell_id "c0" is the id of cells 0 and 2 of "twins.ipynb"; pick one of them with cell_number`},
		{"a number past the end", args{"path": "nb.ipynb", "cell_number": 5, "new_source": "x"}, `cell_number 5 does not exist: "nb.ipynb" has 5 cells, numbered 0 to 4`},
		{"insert after a number past the end", args{"path": "nb.ipynb", "cell_number": 9, "edit_mode": "insert", "cell_type": "raw"}, `cell_number 9 does not exist: "nb.ipynb" has 5 cells, numbered 0 to 4`},
		{"a number in an empty notebook", args{"path": "empty-list.ipynb", "cell_number": 0, "edit_mode": "delete"}, `cell_number 0 does not exist: "empty-list.ipynb" has no cells (insert one without cell_id and cell_number)`},
		{"both selectors", args{"path": "nb.ipynb", "cell_id": "intro", "cell_number": 0, "new_source": "x"}, `both cell_id and cell_number are given; give one of them to pick the cell`},
		{"both selectors to insert", args{"path": "nb.ipynb", "cell_id": "intro", "cell_number": 0, "edit_mode": "insert", "cell_type": "raw"}, `both cell_id and cell_number are given`},
		{"no selector to replace", args{"path": "nb.ipynb", "new_source": "x"}, `edit_mode replace needs the cell: give its cell_id or its cell_number (read_file shows both)`},
		{"no selector to delete", args{"path": "nb.ipynb", "edit_mode": "delete"}, `edit_mode delete needs the cell: give its cell_id or its cell_number`},
		{"insert without a type", args{"path": "nb.ipynb", "edit_mode": "insert", "new_source": "x"}, `edit_mode insert needs cell_type: code, markdown or raw`},
		{"replace with nothing", args{"path": "nb.ipynb", "cell_id": "intro"}, `edit_mode replace needs new_source (the cell's new source), cell_type (its new type) or both`},
		{"the same source", args{"path": "nb.ipynb", "cell_id": "plot_1", "new_source": "df.plot()\n1/0"}, `cell 2 (id "plot_1") of "nb.ipynb" already has this source; it was not changed`},
		{"the same type", args{"path": "nb.ipynb", "cell_id": "plot_1", "cell_type": "code"}, `cell 2 (id "plot_1") of "nb.ipynb" already has this type; it was not changed`},
		{"the same source and type", args{"path": "old.ipynb", "cell_number": 1, "cell_type": "markdown", "new_source": "cell 1"}, `cell 1 of "old.ipynb" already has this source and type; it was not changed`},
		{"not a notebook", args{"path": "notes.txt", "cell_number": 0, "new_source": "x"}, `"notes.txt" is not a Jupyter notebook (its name does not end in .ipynb); notebook_edit edits notebooks, edit_file other files`},
		{"missing", args{"path": "missing.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"missing.ipynb" does not exist; list_files shows the files there are`},
		{"a directory", args{"path": "dir.ipynb", "edit_mode": "insert", "cell_type": "code"}, `"dir.ipynb" is a directory, not a file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, fail(t, ws, workspace.NotebookEditName, tt.args).Text(), tt.want)
		})
	}
	assert.Contains(t, fail(t, small, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_number": 0, "new_source": "x"}).Text(),
		`"nb.ipynb" is 2.9 KiB, larger than the 1 KiB notebook_edit works on`)

	// Values the schema refuses never reach the tool.
	for _, a := range []args{
		{"path": "nb.ipynb", "cell_number": 0, "new_source": "x", "edit_mode": "append"},
		{"path": "nb.ipynb", "cell_number": 0, "cell_type": "heading"},
		{"path": "nb.ipynb", "cell_number": -1, "new_source": "x"},
		{"cell_number": 0, "new_source": "x"},
	} {
		r := call(t, ws, workspace.NotebookEditName, a)
		assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "%v: %s", a, r.Text())
	}
	r := call(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_number": 0, "edit_mode": "append", "new_source": "x"})
	assert.Contains(t, r.Text(), `$.edit_mode: must be one of "replace", "insert", "delete", got "append"`)
	r = call(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_number": 0, "cell_type": "heading"})
	assert.Contains(t, r.Text(), `$.cell_type: must be one of "code", "markdown", "raw", got "heading"`)

	for name, content := range files {
		if name != "dir.ipynb/x" {
			assert.Equal(t, content, read(t, dir, name), "%s is unchanged", name)
		}
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, len(files), "no file was created (dir.ipynb/x is one entry)")
	assert.Equal(t, good, read(t, smallDir, "nb.ipynb"))
}

func TestNotebookPathsCannotLeaveTheWorkspace(t *testing.T) {
	parent := t.TempDir()
	dir, outside := filepath.Join(parent, "ws"), filepath.Join(parent, "outside")
	nb := notebook(5, 1, true)
	put(t, dir, map[string]string{"in.ipynb": nb})
	put(t, outside, map[string]string{"secret.ipynb": nb})
	if err := os.Symlink(filepath.Join(outside, "secret.ipynb"), filepath.Join(dir, "leak.ipynb")); err != nil {
		t.Skipf("symbolic links are not available: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "leakdir")); err != nil {
		t.Skipf("symbolic links are not available: %v", err)
	}
	ws, err := workspace.New(dir)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ws.Close()) })

	for p, why := range map[string]string{
		"../outside/secret.ipynb":              `it climbs out with ".."`,
		"sub/../../outside/secret.ipynb":       `it climbs out with ".."`,
		filepath.Join(outside, "secret.ipynb"): "it is absolute",
		"/secret.ipynb":                        "it is absolute",
		"leak.ipynb":                           "a symbolic link on the way leads out of it",
		"leakdir/secret.ipynb":                 "a symbolic link on the way leads out of it",
		"leakdir/missing.ipynb":                "a symbolic link on the way leads out of it",
	} {
		for _, a := range []args{
			{"path": p, "cell_number": 0, "new_source": "pwned"},
			{"path": p, "edit_mode": "insert", "cell_type": "code", "new_source": "pwned"},
			{"path": p, "edit_mode": "delete", "cell_id": "c0"},
		} {
			r := fail(t, ws, workspace.NotebookEditName, a)
			assert.ErrorIs(t, r.Err, workspace.ErrOutside, p)
			assert.Contains(t, r.Text(), fmt.Sprintf("path %q is outside the workspace: %s", p, why))
		}
		r := fail(t, ws, workspace.ReadFileName, args{"path": p})
		assert.ErrorIs(t, r.Err, workspace.ErrOutside, p)
	}
	assert.Equal(t, nb, read(t, outside, "secret.ipynb"))
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing was created outside")
}

func TestNotebookEditIsLeftOutWhenReadOnly(t *testing.T) {
	ws, _ := open(t, nil, workspace.WithReadOnly())
	tools, err := ws.Tools(t.Context())
	require.NoError(t, err)
	for _, tl := range tools {
		assert.NotEqual(t, workspace.NotebookEditName, tool.Name(tl))
	}
	assert.NotContains(t, find(t, ws, workspace.ReadFileName).Definition().Description, workspace.NotebookEditName,
		"read_file does not point to a tool that is not there")

	ws, _ = open(t, nil)
	edit := find(t, ws, workspace.NotebookEditName)
	assert.Equal(t, tool.Metadata{Destructive: true}, tool.MetadataOf(edit))
	assert.Equal(t, "Edit notebook", tool.TitleOf(edit))
	assert.Contains(t, find(t, ws, workspace.ReadFileName).Definition().Description, workspace.NotebookEditName)
}

func TestReadFileRendersNotebooks(t *testing.T) {
	const whole = `Notebook "nb.ipynb": nbformat 4.5, 5 cells, language python.

[cell 0] markdown, id "intro"
     1	# Analyse des données — 日本語 ✓
     2	
     3	Compare <b> & <i>: "quoted", tab	here, sep` + "\u2028" + `line.

[cell 1] code, id "load-data", execution_count 1
     1	import pandas as pd
     2	df = pd.read_csv("données.csv")
     3	df.head()
  [output: stdout]
  | loaded 3 rows
  | ü done
  [output: result]
  [text/html output]
  |    a  b
  | 0  1  2

[cell 2] code, id "plot_1", execution_count 2
     1	df.plot()
     2	1/0
  [output: display]
  [image/png output]
  | <Figure size 640x480 with 1 Axes>
  [output: error] ZeroDivisionError: division by zero
  | ---------------------------------------------------------------------------
  | ZeroDivisionError                         Traceback (most recent call last)
  | Cell In[2], line 2
  |       1 df.plot()
  | ----> 2 1/0
  | 
  | ZeroDivisionError: division by zero

[cell 3] raw, id "raw0"
     1	.. note:: raw cell

[cell 4] markdown, id "notes"
     1	Notes ![dot](attachment:dot.png)`

	long := strings.Replace(notebook(4, 1, false), `"source": [`, `"outputs": [{"output_type": "stream", "name": "stderr", "text": "`+strings.Repeat(`warn\n`, 25)+`"}, {"output_type": "weird"}, 7], "source": [`, 1)
	files := map[string]string{
		"nb.ipynb":     fixture(t, "jupyter.ipynb"),
		"old.ipynb":    notebook(4, 2, false),
		"empty.ipynb":  notebook(4, 0, false),
		"long.ipynb":   long,
		"broken.ipynb": "{\n \"cells\": [\n  {]\n}\n",
		"v3.IPYNB":     `{"worksheets": [], "nbformat": 3}`,
	}
	ws, _ := open(t, files)

	tests := []struct {
		name string
		args args
		want string
	}{
		{"the whole notebook", args{"path": "nb.ipynb"}, whole},
		{"a window inside a cell", args{"path": "nb.ipynb", "offset": 12, "limit": 4}, "[cell 1, continued]\n  [output: stdout]\n  | loaded 3 rows\n  | ü done\n  [output: result]\n[lines 12-15 of 39 of the notebook's rendering; call again with offset 16]"},
		{"a window from a cell's start to the end", args{"path": "nb.ipynb", "offset": 35}, "[cell 3] raw, id \"raw0\"\n     1\t.. note:: raw cell\n\n[cell 4] markdown, id \"notes\"\n     1\tNotes ![dot](attachment:dot.png)\n[lines 35-39 of 39 of the notebook's rendering]"},
		{"the first line", args{"path": "nb.ipynb", "limit": 1}, `Notebook "nb.ipynb": nbformat 4.5, 5 cells, language python.` + "\n[lines 1-1 of 39 of the notebook's rendering; call again with offset 2]"},
		{"without ids", args{"path": "old.ipynb"}, "Notebook \"old.ipynb\": nbformat 4.4, 2 cells.\n\n[cell 0] markdown\n     1\tcell 0\n\n[cell 1] markdown\n     1\tcell 1"},
		{"no cells", args{"path": "empty.ipynb"}, `Notebook "empty.ipynb": nbformat 4.4, 0 cells.`},
		{"outputs cut", args{"path": "long.ipynb"}, "Notebook \"long.ipynb\": nbformat 4.4, 1 cell.\n\n[cell 0] markdown\n     1\tcell 0\n  [output: stderr]\n" + strings.Repeat("  | warn\n", 20) + "  | [5 more lines]\n  [output: weird]\n  [an output that is not an object]"},
		{"not valid: the text", args{"path": "broken.ipynb"}, "[\"broken.ipynb\" is not a valid notebook: invalid JSON at line 3 (byte 18): invalid character ']' looking for beginning of object key string; its text follows]\n     1\t{\n     2\t \"cells\": [\n     3\t  {]\n     4\t}"},
		{"nbformat 3: the text", args{"path": "v3.IPYNB"}, "[\"v3.IPYNB\" is an nbformat 3 notebook; only nbformat 4 is supported (Jupyter converts a notebook to it when it saves it); its text follows]\n     1\t{\"worksheets\": [], \"nbformat\": 3}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, succeed(t, ws, workspace.ReadFileName, tt.args))
		})
	}
	assert.Contains(t, fail(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb", "offset": 40}).Text(),
		`offset 40 is past the end of the rendering of the notebook "nb.ipynb", which has 39 lines`)
}

func TestEditFilePointsToNotebookEdit(t *testing.T) {
	ws, dir := open(t, map[string]string{"nb.ipynb": fixture(t, "jupyter.ipynb")})
	// Text copied from read_file's rendering is not in the file's JSON.
	r := fail(t, ws, workspace.EditFileName, args{"path": "nb.ipynb", "old_string": "Compare <b> & <i>: \"quoted\"", "new_string": "x"})
	assert.Contains(t, r.Text(), `old_string occurs 0 times in "nb.ipynb"; read_file shows a notebook's cells, not the JSON the file holds: change a cell with notebook_edit`)
	// Text that is in the JSON still can be edited.
	succeed(t, ws, workspace.EditFileName, args{"path": "nb.ipynb", "old_string": `"version": "3.11.7"`, "new_string": `"version": "3.12.0"`})
	assert.Contains(t, read(t, dir, "nb.ipynb"), `"version": "3.12.0"`)
}

func TestNotebookEditsDoNotInterleave(t *testing.T) {
	ws, dir := open(t, map[string]string{"nb.ipynb": notebook(5, 1, true)})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			r := call(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "edit_mode": "insert", "cell_type": "code", "cell_id": "c0", "new_source": fmt.Sprintf("print(%d)", i)})
			assert.False(t, r.IsError, r.Text())
			r = call(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"})
			assert.False(t, r.IsError, r.Text())
		})
	}
	wg.Wait()
	ids := cellIDs(t, read(t, dir, "nb.ipynb"))
	require.Len(t, ids, 9, "no insert was lost")
	view := succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"})
	for i := range 8 {
		assert.Contains(t, view+"\n", fmt.Sprintf("\tprint(%d)\n", i))
	}
}

// TestNotebookWithAByteOrderMark checks that a notebook written with a
// UTF-8 byte order mark before its JSON, as some Windows editors write
// text, is read and edited as a notebook, and keeps its mark.
func TestNotebookWithAByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	ws, dir := open(t, map[string]string{"nb.ipynb": bom + notebook(5, 1, true)})
	assert.Equal(t, "Notebook \"nb.ipynb\": nbformat 4.5, 1 cell.\n\n[cell 0] markdown, id \"c0\"\n     1\tcell 0",
		succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"}))
	succeed(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_id": "c0", "new_source": "changed"})
	got := read(t, dir, "nb.ipynb")
	assert.Equal(t, bom+strings.Replace(notebook(5, 1, true), `"cell 0"`, `"changed"`, 1), got)
}

// TestReadFileRendersOutputsAsATerminalShowsThem checks that the outputs
// of a cell are shown without the escapes that color them, and a progress
// bar redrawn after carriage returns as it was drawn last.
func TestReadFileRendersOutputsAsATerminalShowsThem(t *testing.T) {
	progress := `  0%|          | 0/3\r 33%|###       | 1/3\r100%|##########| 3/3\r\n`
	outputs := `"outputs": [` +
		`{"output_type": "stream", "name": "stderr", "text": ["` + progress + `", "\u001b[1;31mERROR\u001b[0m \u001b]8;;http://example.com\u0007failed\u001b]8;;\u0007\n"]},` +
		`{"output_type": "execute_result", "data": {"text/plain": ["\u001b[32mgreen\u001b[0m"]}, "metadata": {}, "execution_count": 1}` +
		`], "source": [`
	ws, _ := open(t, map[string]string{"nb.ipynb": strings.Replace(notebook(4, 1, false), `"source": [`, outputs, 1)})
	assert.Equal(t, "Notebook \"nb.ipynb\": nbformat 4.4, 1 cell.\n\n[cell 0] markdown\n     1\tcell 0\n"+
		"  [output: stderr]\n  | 100%|##########| 3/3\n  | ERROR failed\n  [output: result]\n  | green",
		succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"}))
}

// TestGrepSearchesNotebooksByCell checks that grep reports a notebook's
// matches by cell and line, as read_file numbers them, and finds text that
// the JSON escapes; a broken notebook is searched as text.
func TestGrepSearchesNotebooksByCell(t *testing.T) {
	const nb = `{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# Load \"sales\"\n"]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
   "source": ["import pandas as pd\n", "df = pd.read_csv(\"sales.csv\")\n"]}
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 4
}
`
	ws, _ := open(t, map[string]string{
		"analysis.ipynb": nb,
		"broken.ipynb":   "{\"cells\": [\n  read_csv(\"sales.csv\") is not JSON\n",
	})
	got := succeed(t, ws, workspace.GrepName, args{"pattern": `read_csv\("sales`})
	assert.Equal(t, "analysis.ipynb [cell 1]:2: df = pd.read_csv(\"sales.csv\")\nbroken.ipynb:2:   read_csv(\"sales.csv\") is not JSON", got)

	got = succeed(t, ws, workspace.GrepName, args{"pattern": `Load "sales"`, "glob": "*.ipynb"})
	assert.Equal(t, "analysis.ipynb [cell 0]:1: # Load \"sales\"", got)
}
