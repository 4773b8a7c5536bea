package workspace_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/workspace"
)

// nonFiniteNotebook is a notebook as Jupyter (Python's json module) saves
// one that holds floats JSON has no number for: NaN, Infinity and
// -Infinity as bare words, in an output's data, in a cell's metadata and in
// the notebook's (a widget's state), and as text inside strings.
const nonFiniteNotebook = `{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "stats",
   "metadata": {
    "bounds": [
     -Infinity,
     Infinity
    ]
   },
   "outputs": [
    {
     "data": {
      "application/json": {
       "max": Infinity,
       "mean": NaN,
       "min": -Infinity,
       "note": "NaN, Infinity and -Infinity stay text here: \"NaN\" Infinity"
      },
      "text/plain": [
       "{'mean': nan, 'max': inf, 'min': -inf}"
      ]
     },
     "execution_count": 1,
     "metadata": {},
     "output_type": "execute_result"
    }
   ],
   "source": [
    "x = float(\"NaN\")\n",
    "stats = {\"mean\": x, \"max\": float(\"Infinity\")}"
   ]
  },
  {
   "cell_type": "markdown",
   "id": "note",
   "metadata": {
    "weight": NaN
   },
   "source": [
    "NaN means *not a number*"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": NaN,
   "id": "odd",
   "metadata": {},
   "outputs": [],
   "source": [
    "y = -x"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  },
  "widgets": {
   "state": {
    "w1": {
     "max": Infinity,
     "value": NaN
    }
   }
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// nonFiniteCell returns where cell n of nonFiniteNotebook starts, and
// where the next one does (or the list ends).
func nonFiniteCell(t *testing.T, n int) (start, end int) {
	t.Helper()
	starts := []int{}
	for i := 0; ; {
		k := strings.Index(nonFiniteNotebook[i:], "  {\n   \"cell_type\"")
		if k < 0 {
			break
		}
		starts = append(starts, i+k)
		i += k + 1
	}
	require.Len(t, starts, 3)
	starts = append(starts, strings.Index(nonFiniteNotebook, " ],\n \"metadata\""))
	return starts[n], starts[n+1]
}

// TestReadFileShowsNotebooksWithNonFiniteNumbers checks that read_file
// renders a notebook with NaN and infinities in its outputs and metadata as
// a notebook, showing text as written and a count that is NaN not at all.
func TestReadFileShowsNotebooksWithNonFiniteNumbers(t *testing.T) {
	ws, _ := open(t, map[string]string{"nb.ipynb": nonFiniteNotebook})
	assert.Equal(t, `Notebook "nb.ipynb": nbformat 4.5, 3 cells, language python.

[cell 0] code, id "stats", execution_count 1
     1	x = float("NaN")
     2	stats = {"mean": x, "max": float("Infinity")}
  [output: result]
  [application/json output]
  | {'mean': nan, 'max': inf, 'min': -inf}

[cell 1] markdown, id "note"
     1	NaN means *not a number*

[cell 2] code, id "odd"
     1	y = -x`, succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"}))
}

// TestGrepSearchesNotebooksWithNonFiniteNumbers checks that grep searches
// such a notebook cell by cell, not as JSON text, and shows the words as
// the sources have them.
func TestGrepSearchesNotebooksWithNonFiniteNumbers(t *testing.T) {
	ws, _ := open(t, map[string]string{"nb.ipynb": nonFiniteNotebook})
	assert.Equal(t, "nb.ipynb [cell 0]:1: x = float(\"NaN\")\nnb.ipynb [cell 1]:1: NaN means *not a number*",
		succeed(t, ws, workspace.GrepName, args{"pattern": "NaN"}))
	assert.Equal(t, "nb.ipynb [cell 0]:2: stats = {\"mean\": x, \"max\": float(\"Infinity\")}",
		succeed(t, ws, workspace.GrepName, args{"pattern": "Infinity"}))
	assert.Equal(t, `No matches for "mean\": NaN".`,
		succeed(t, ws, workspace.GrepName, args{"pattern": `mean": NaN`}), "outputs are not searched as JSON")
}

// TestNotebookEditKeepsNonFiniteNumbers checks that each kind of edit of
// such a notebook leaves every byte outside the cell it changes as it was,
// the bare words included, and that the result reads again.
func TestNotebookEditKeepsNonFiniteNumbers(t *testing.T) {
	s0, e0 := nonFiniteCell(t, 0)
	s1, e1 := nonFiniteCell(t, 1)
	tests := []struct {
		name string
		args args
		// The file after the edit, from the original's parts.
		want func(newID string) string
		msg  string
	}{
		{
			name: "replace a markdown cell with NaN in its metadata",
			args: args{"cell_id": "note", "new_source": "Infinity and NaN\n"},
			want: func(string) string {
				return nonFiniteNotebook[:s1] + "  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"note\",\n   \"metadata\": {\n    \"weight\": NaN\n   },\n   \"source\": [\n    \"Infinity and NaN\\n\"\n   ]\n  },\n" + nonFiniteNotebook[e1:]
			},
			msg: `Replaced the source of markdown cell 1 (id "note") of "nb.ipynb".`,
		},
		{
			name: "replace a code cell with NaN in its outputs",
			args: args{"cell_number": 0, "new_source": "z = 1"},
			want: func(string) string {
				return nonFiniteNotebook[:s0] + "  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": \"stats\",\n   \"metadata\": {\n    \"bounds\": [\n     -Infinity,\n     Infinity\n    ]\n   },\n   \"outputs\": [],\n   \"source\": [\n    \"z = 1\"\n   ]\n  },\n" + nonFiniteNotebook[e0:]
			},
			msg: `Replaced the source of code cell 0 (id "stats") of "nb.ipynb"; its outputs and execution count were cleared, as they no longer match it.`,
		},
		{
			name: "insert",
			args: args{"cell_id": "stats", "edit_mode": "insert", "cell_type": "raw", "new_source": "NaN"},
			want: func(id string) string {
				return nonFiniteNotebook[:s1] + "  {\n   \"cell_type\": \"raw\",\n   \"id\": \"" + id + "\",\n   \"metadata\": {},\n   \"source\": [\n    \"NaN\"\n   ]\n  },\n" + nonFiniteNotebook[s1:]
			},
			msg: `Inserted raw cell 1 (id "NEWID") into "nb.ipynb", after cell 0 (id "stats"); it has 4 cells now, and the cells after the new one are numbered one higher than before.`,
		},
		{
			name: "delete the cell with NaN in its outputs",
			args: args{"cell_number": 0, "edit_mode": "delete"},
			want: func(string) string { return nonFiniteNotebook[:s0] + nonFiniteNotebook[e0:] },
			msg:  `Deleted code cell 0 (id "stats") from "nb.ipynb"; 2 cells left, the ones after it numbered one lower than before.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, dir := open(t, map[string]string{"nb.ipynb": nonFiniteNotebook})
			a := args{"path": "nb.ipynb"}
			for k, v := range tt.args {
				a[k] = v
			}
			got := succeed(t, ws, workspace.NotebookEditName, a)
			after := read(t, dir, "nb.ipynb")
			id := ""
			if tt.args["edit_mode"] == "insert" {
				i := strings.Index(got, `(id "`) + len(`(id "`)
				id = got[i : i+8]
				got = strings.Replace(got, id, "NEWID", 1)
			}
			assert.Equal(t, tt.msg, got)
			assert.Equal(t, tt.want(id), after, "every byte outside the edited cell as it was")
			// What was written reads again, as a notebook.
			assert.Contains(t, succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"}), `Notebook "nb.ipynb": nbformat 4.5,`)
		})
	}
}

// TestNotebooksWithMalformedNonFiniteWordsAreRefused checks that only the
// words Python writes, standing as values, are taken: near misses are
// invalid JSON, with the error there was before, and a word where no value
// may stand is named in the error as itself.
func TestNotebooksWithMalformedNonFiniteWordsAreRefused(t *testing.T) {
	const at = `"weight": NaN`
	tests := []struct{ value, want string }{
		{"NaNa", `invalid JSON at line 40 (byte 756): invalid character 'N' looking for beginning of value`},
		{"+Infinity", `invalid JSON at line 40 (byte 756): invalid character '+' looking for beginning of value`},
		{"nan", `invalid JSON at line 40 (byte 757): invalid character 'a' in literal null (expecting 'u')`},
		{"-NaN", `invalid JSON at line 40 (byte 757): invalid character 'N' in numeric literal`},
		{"Infinity1", `invalid JSON at line 40 (byte 756): invalid character 'I' looking for beginning of value`},
		{"NaN NaN", `invalid JSON at line 40 (byte 760): unexpected NaN after object key:value pair`},
		{`"x"NaN`, `invalid JSON at line 40 (byte 759): invalid character 'N' after object key:value pair`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			content := strings.Replace(nonFiniteNotebook, at, `"weight": `+tt.value, 1)
			require.NotEqual(t, nonFiniteNotebook, content)
			ws, dir := open(t, map[string]string{"nb.ipynb": content})
			want := `"nb.ipynb" is not a valid notebook: ` + tt.want
			assert.Equal(t, `tool "notebook_edit" failed: `+want, fail(t, ws, workspace.NotebookEditName, args{"path": "nb.ipynb", "cell_number": 2, "edit_mode": "delete"}).Text())
			assert.Equal(t, content, read(t, dir, "nb.ipynb"), "nothing was written")
			// read_file shows the text, and grep searches it as text.
			assert.True(t, strings.HasPrefix(succeed(t, ws, workspace.ReadFileName, args{"path": "nb.ipynb"}), "["+want+"; its text follows]\n"))
			assert.Contains(t, succeed(t, ws, workspace.GrepName, args{"pattern": "weight"}), "nb.ipynb:40:")
		})
	}
}
