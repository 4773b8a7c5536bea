package workspace

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteWritesWhatJupyterWrites(t *testing.T) {
	for in, want := range map[string]string{
		"plain":               `"plain"`,
		"<a href=\"x\">&</a>": `"<a href=\"x\">&</a>"`,
		"données ✓ 日本":        `"données ✓ 日本"`,
		"\t\n\r\b\f\\":        `"\t\n\r\b\f\\"`,
		"\x00\x1b\x1f\x7f":    `"\u0000\u001b\u001f` + "\x7f" + `"`,
		"\u2028\u2029":        "\"\u2028\u2029\"",
		"bad \xff byte":       "\"bad \ufffd byte\"",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSourceLinesSplitAsPythonDoes(t *testing.T) {
	// Python: "a\x85b\u2028c\r\nd\re\x1cf\n\ng".splitlines(True), \x85 being U+0085
	got := sourceLines("a\u0085b\u2028c\r\nd\re\x1cf\n\ng")
	want := []string{`"a` + "\u0085" + `"`, `"b` + "\u2028" + `"`, `"c\r\n"`, `"d\r"`, `"e\u001c"`, `"f\n"`, `"\n"`, `"g"`}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sourceLines = %q, want %q", got, want)
	}
	if got := sourceLines(""); got != nil {
		t.Errorf("an empty source has no lines, got %q", got)
	}
}

func TestFiniteReplacesOnlyNonFiniteValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		from int
		want string
	}{
		{`[NaN,Infinity,-Infinity]`, 0, `[0  ,0       ,0        ]`},
		{"{\"a\":NaN,\"b\": [ Infinity\t]}\n", 0, "{\"a\":0  ,\"b\": [ 0       \t]}\n"},
		{`NaN`, 0, `0  `},
		{"\ufeffNaN", len("\ufeff"), "\ufeff0  "},
		{`{"a\\": NaN}`, 0, `{"a\\": 0  }`},
		// Strings, escaped quotes included, are left alone.
		{`["NaN", "a \"NaN\" Infinity", "-Infinity"]`, 0, ""},
		// Words that are not the ones Python writes, or not set apart.
		{`[NaNa, -NaN, +Infinity, nan, inf, 1NaN, Infinity1, NaN:1, "x"NaN, --Infinity]`, 0, ""},
		{`{NaN: 1}`, 0, ""},
		{``, 0, ""},
	} {
		in := []byte(tt.in)
		got := finite(in, tt.from)
		if tt.want == "" {
			if len(in) > 0 && &got[0] != &in[0] {
				t.Errorf("finite(%s) made a copy, want the text itself", tt.in)
			}
			tt.want = tt.in
		}
		if string(got) != tt.want {
			t.Errorf("finite(%s) = %q, want %q", tt.in, got, tt.want)
		}
		if tt.in == `NaN` && string(in) != `NaN` {
			t.Errorf("finite changed its argument: %s", in)
		}
	}
}

// checkFinite checks what finite does with data: the same length, and
// only NaN, Infinity and -Infinity replaced; nothing at all in valid JSON.
func checkFinite(t *testing.T, data []byte) {
	fin := finite(data, 0)
	if len(fin) != len(data) {
		t.Fatalf("finite changed the length from %d to %d", len(data), len(fin))
	}
	if json.Valid(data) && !bytes.Equal(fin, data) {
		t.Fatalf("finite changed valid JSON %q into %q", data, fin)
	}
	for i := range fin {
		switch {
		case fin[i] == data[i]:
		case fin[i] == '0' && nonFiniteWord(data, i) != "":
		case fin[i] == ' ':
		default:
			t.Fatalf("finite changed byte %d of %q into %q", i, data, fin)
		}
	}
}

// cellBytes returns the bytes of each cell of nb.
func cellBytes(nb *notebook) []string {
	s := make([]string, len(nb.cells))
	for i, c := range nb.cells {
		s[i] = string(nb.data[c.start:c.end])
	}
	return s
}

func FuzzNotebook(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ipynb"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data, uint8(0), uint8(1), "x = 1\n")
		}
	}
	for _, s := range []string{
		`{"cells":[],"nbformat":4,"nbformat_minor":5}`,
		`{"cells": [ ], "nbformat": 4}`,
		`{"cells":[{"cell_type":"code","source":"a","outputs":[{"output_type":"stream","text":["x\n"]}]}],"nbformat":4,"nbformat_minor":4}`,
		"{\r\n\t\"nbformat\":4,\r\n\t\"cells\":[\r\n\t\t{\"cell_type\":\"markdown\",\"id\":\"a\",\"source\":null,\"attachments\":{}}\r\n\t]\r\n}",
		`{"cells":[{"cell_typ\u0065":"raw","\u0073ource":["a\u2028","b"]},{"cell_type":"x"}],"nbformat":4,"nbformat_minor":9}`,
		`[]`, `{}`, ``, `{"cells":[1],"nbformat":4}`, `{"nbformat":3,"cells":[]}`,
		"\ufeff{\"cells\":[{\"cell_type\":\"raw\",\"source\":\"\"}],\"nbformat\":4}", "\ufeff", "\ufeff\ufeff{}",
		// NaN, Infinity and -Infinity as Jupyter writes them, in and out of
		// strings, and near misses.
		`{"cells":[{"cell_type":"code","id":"a","metadata":{"x":NaN},"outputs":[{"output_type":"execute_result","data":{"application/json":[NaN,Infinity,-Infinity,"NaN"]}}],"source":"NaN"},{"cell_type":"raw","source":["-Infinity"],"metadata":{"y":[ Infinity ]}}],"metadata":{"w":-Infinity},"nbformat":4,"nbformat_minor":5}`,
		"\ufeff{\"cells\": [{\"cell_type\": \"markdown\", \"source\": \"\", \"metadata\": {\"n\": NaN}}], \"nbformat\": 4}",
		`{"cells":[],"nbformat":4,"x":NaNa}`, `{"cells":[],"nbformat":4,"x":+Infinity}`, `{"cells":[],"nbformat":4,"x":nan}`,
		`{"cells":[],"nbformat":NaN}`, `{"cells":[],"nbformat":4,NaN}`,
	} {
		for op := range uint8(4) {
			f.Add([]byte(s), op, uint8(0), "a\nb\u2028c\x00\"")
		}
	}

	types := []string{cellCode, cellMarkdown, cellRaw}
	f.Fuzz(func(t *testing.T, data []byte, op, at uint8, src string) {
		const p = "f.ipynb"
		checkFinite(t, data)
		nb, err := parseNotebook(p, data)
		if err != nil {
			if !strings.Contains(err.Error(), `"f.ipynb"`) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		// The rendering never fails from its first line, and a window of it
		// is part of it.
		if _, err := renderNotebook(p, nb, 1, 0); err != nil {
			t.Fatalf("render: %v", err)
		}
		lines := nb.render(p)
		if _, err := renderNotebook(p, nb, 1+int(at)%len(lines), 1+int(op)); err != nil {
			t.Fatalf("render a window: %v", err)
		}

		// The encoding of a source reads back as the source.
		if utf8.ValidString(src) {
			var joined strings.Builder
			for _, l := range sourceLines(src) {
				var s string
				if err := json.Unmarshal([]byte(l), &s); err != nil {
					t.Fatalf("line %s is not a JSON string: %v", l, err)
				}
				joined.WriteString(s)
			}
			if joined.String() != src {
				t.Fatalf("sourceLines(%q) reads back as %q", src, joined.String())
			}
		}

		n := len(nb.cells)
		before := cellBytes(nb)
		in := NotebookEditArgs{Path: p}
		var mode string
		pick := func() {
			k := int(at) % n
			in.CellNumber = &k
		}
		switch op % 4 {
		case 0:
			if n == 0 {
				return
			}
			mode = modeReplace
			pick()
			in.NewSource = &src
		case 1:
			if n == 0 {
				return
			}
			mode = modeReplace
			pick()
			in.CellType = types[int(op/4)%len(types)]
		case 2:
			mode = modeInsert
			if k := int(at)%(n+1) - 1; k >= 0 {
				in.CellNumber = &k
			}
			in.CellType = types[int(op/4)%len(types)]
			in.NewSource = &src
		case 3:
			if n == 0 {
				return
			}
			mode = modeDelete
			pick()
		}
		if err := checkNotebookEdit(mode, in); err != nil {
			t.Fatalf("arguments refused: %v", err)
		}
		out, msg, err := nb.edit(p, mode, in)
		if err != nil {
			if !strings.Contains(err.Error(), "it was not changed") {
				t.Fatalf("edit: %v", err)
			}
			return
		}
		if msg == "" {
			t.Fatal("no message")
		}
		edited, err := parseNotebook(p, out)
		if err != nil {
			t.Fatalf("the edited notebook does not parse: %v\n%s", err, out)
		}
		list := nb.cellList
		if !bytes.Equal(out[:list.start], data[:list.start]) || !bytes.Equal(out[len(out)-(len(data)-list.end):], data[list.end:]) {
			t.Fatalf("the edit changed bytes outside the cells list:\n%s\n%s", data, out)
		}
		after := cellBytes(edited)
		want := before
		switch mode {
		case modeReplace:
			k := *in.CellNumber
			c := edited.cells[k]
			if in.NewSource != nil && utf8.ValidString(src) && c.source != src {
				t.Fatalf("cell %d has the source %q, want %q", k, c.source, src)
			}
			if in.CellType != "" && c.typ != in.CellType {
				t.Fatalf("cell %d has the type %q, want %q", k, c.typ, in.CellType)
			}
			// A cell that becomes code, or code whose source changed, has
			// empty outputs and no execution count; one that stops being
			// code has neither field. Other fields are left alone.
			old := nb.cells[k]
			outputs, count := edited.value(c, "outputs"), edited.value(c, "execution_count")
			switch {
			case c.typ == cellCode && (old.typ != cellCode || old.source != c.source):
				if string(outputs) != "[]" || string(count) != "null" {
					t.Fatalf("code cell %d has the outputs %s and the execution_count %s", k, outputs, count)
				}
			case old.typ == cellCode && c.typ != cellCode:
				if outputs != nil || count != nil {
					t.Fatalf("%s cell %d has the outputs %s and the execution_count %s", c.typ, k, outputs, count)
				}
			}
			want = append(append(append([]string(nil), before[:k]...), after[k]), before[k+1:]...)
		case modeInsert:
			k := 0
			if in.CellNumber != nil {
				k = *in.CellNumber + 1
			}
			if len(after) != n+1 {
				t.Fatalf("%d cells after an insert into %d", len(after), n)
			}
			c := edited.cells[k]
			if c.typ != in.CellType || (utf8.ValidString(src) && c.source != src) || c.hasID != (nb.minor >= 5) {
				t.Fatalf("the new cell %d is %q with source %q and id %v", k, c.typ, c.source, c.hasID)
			}
			want = append(append(append([]string(nil), before[:k]...), after[k]), before[k:]...)
			// Deleting the new cell gives the file back, byte for byte,
			// unless its empty list was not written [].
			again, _, err := edited.edit(p, modeDelete, NotebookEditArgs{CellNumber: &k})
			if err != nil {
				t.Fatalf("delete the new cell: %v", err)
			}
			if (n > 0 || string(data[list.start:list.end]) == "[]") && !bytes.Equal(again, data) {
				t.Fatalf("insert and delete do not give the file back:\n%s\n%s", data, again)
			}
		case modeDelete:
			k := *in.CellNumber
			want = append(append([]string(nil), before[:k]...), before[k+1:]...)
		}
		if strings.Join(after, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("other cells changed:\nbefore %q\nafter  %q", before, after)
		}
	})
}
