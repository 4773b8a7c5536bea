package workspace

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
)

// maxOutputLines is how many lines of each output of a cell read_file
// shows.
const maxOutputLines = 20

// ansiEscape matches the terminal escape sequences that color tracebacks
// and the output of many programs: control sequences (colors, cursor
// moves), operating system commands (titles, hyperlinks) and the other
// two-byte escapes.
var ansiEscape = regexp.MustCompile("\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b\n]*(?:\x07|\x1b\\\\)?|[ -/]*[0-~])")

// renderedLine is a line of a notebook's rendering and the cell it belongs
// to (-1 for none).
type renderedLine struct {
	text   string
	cell   int
	header bool // the cell's first line
}

// renderNotebook shows the notebook nb, the file p, for read_file: a line
// about the notebook, then each cell with its number, type and id, its
// source lines numbered from 1 within the cell (as Jupyter's tracebacks
// count them), and its outputs, text cut to maxOutputLines lines, other
// data named by its type. offset and limit pick lines of the rendering, as
// they pick lines of a text file.
func renderNotebook(p string, nb *notebook, offset, limit int) (string, error) {
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = DefaultReadLimit
	}
	lines := nb.render(p)
	total := len(lines)
	if offset > total {
		return "", fmt.Errorf("offset %d is past the end of the rendering of the notebook %q, which has %d lines", offset, clip(p), total)
	}
	last := offset - 1 + min(limit, total-offset+1)
	var b strings.Builder
	if first := lines[offset-1]; first.cell >= 0 && !first.header {
		fmt.Fprintf(&b, "[cell %d, continued]\n", first.cell)
	}
	for _, l := range lines[offset-1 : last] {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	switch {
	case last < total:
		fmt.Fprintf(&b, "[lines %d-%d of %d of the notebook's rendering; call again with offset %d]", offset, last, total, last+1)
	case offset > 1:
		fmt.Fprintf(&b, "[lines %d-%d of %d of the notebook's rendering]", offset, last, total)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// render returns the lines of the notebook's rendering.
func (nb *notebook) render(p string) []renderedLine {
	head := fmt.Sprintf("Notebook %q: nbformat %d.%d, %s", p, nb.major, nb.minor, plural(len(nb.cells), "cell"))
	if lang := nb.language(); lang != "" {
		head += ", language " + lang
	}
	lines := []renderedLine{{text: head + ".", cell: -1}}
	for n, c := range nb.cells {
		add := func(text string) { lines = append(lines, renderedLine{text: text, cell: n}) }
		lines = append(lines, renderedLine{cell: -1})
		h := fmt.Sprintf("[cell %d] %s", n, c.typ)
		if c.hasID {
			h += fmt.Sprintf(", id %q", c.id)
		}
		// Decoded from the file itself: a count that is not an integer,
		// NaN included, is not shown.
		var count *int
		if raw := nb.value(c, "execution_count"); raw != nil && json.Unmarshal(raw, &count) == nil && count != nil {
			h += fmt.Sprintf(", execution_count %d", *count)
		}
		lines = append(lines, renderedLine{text: h, cell: n, header: true})
		if c.source == "" {
			add("  (empty)")
		}
		for i, l := range splitText(c.source) {
			add(fmt.Sprintf("%6d\t%s", i+1, textcut.Clip(strings.TrimSuffix(l, "\r"), maxLineRead, " [line cut]")))
		}
		// The outputs are decoded as finite leaves them, for a NaN in an
		// output's data not to hide the rest; of their values only strings
		// are shown.
		if raw := nb.finiteValue(c, "outputs"); raw != nil {
			for _, l := range renderOutputs(raw) {
				add(l)
			}
		}
	}
	return lines
}

// language returns the notebook's programming language, as its metadata
// names it, or "".
func (nb *notebook) language() string {
	i := nb.top.find("metadata")
	if i < 0 {
		return ""
	}
	v := nb.top.members[i].value
	var meta struct {
		Kernelspec struct {
			Language string `json:"language"`
		} `json:"kernelspec"`
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
	}
	if json.Unmarshal(nb.finite[v.start:v.end], &meta) != nil {
		return ""
	}
	if meta.Kernelspec.Language != "" {
		return textcut.Clip(meta.Kernelspec.Language, 100, "...")
	}
	return textcut.Clip(meta.LanguageInfo.Name, 100, "...")
}

// splitText splits text into its lines, without their line breaks; a
// final line break ends the last line rather than starting another.
func splitText(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// nbOutput is an output of a code cell, as far as its rendering needs.
type nbOutput struct {
	OutputType string                     `json:"output_type"`
	Name       string                     `json:"name"`
	Text       json.RawMessage            `json:"text"`
	Data       map[string]json.RawMessage `json:"data"`
	Ename      string                     `json:"ename"`
	Evalue     string                     `json:"evalue"`
	Traceback  []string                   `json:"traceback"`
}

// renderOutputs returns the lines that show the outputs raw of a code
// cell: a line that says what each is, then its text, cut, with a prefix
// that sets it apart from the source.
func renderOutputs(raw []byte) []string {
	var outputs []json.RawMessage
	if json.Unmarshal(raw, &outputs) != nil {
		return []string{"  [outputs that are not a list of objects]"}
	}
	var lines []string
	for _, o := range outputs {
		var out nbOutput
		if json.Unmarshal(o, &out) != nil {
			lines = append(lines, "  [an output that is not an object]")
			continue
		}
		var text string
		switch out.OutputType {
		case "stream":
			lines = append(lines, "  [output: "+clipLabel(out.Name)+"]")
			text, _ = decodeMaybe(out.Text)
		case "execute_result", "display_data":
			kind := "result"
			if out.OutputType == "display_data" {
				kind = "display"
			}
			lines = append(lines, "  [output: "+kind+"]")
			types := make([]string, 0, len(out.Data))
			for t := range out.Data {
				types = append(types, t)
			}
			slices.Sort(types)
			for _, t := range types {
				if t != "text/plain" {
					lines = append(lines, "  ["+clipLabel(t)+" output]")
				}
			}
			text, _ = decodeMaybe(out.Data["text/plain"])
		case "error":
			lines = append(lines, "  [output: error] "+textcut.Clip(oneLine(ansiEscape.ReplaceAllString(out.Ename+": "+out.Evalue, "")), maxLineShown, " [line cut]"))
			text = strings.Join(out.Traceback, "\n")
		default:
			lines = append(lines, "  [output: "+clipLabel(out.OutputType)+"]")
		}
		// Programs color text and redraw progress bars in place, as
		// terminals and Jupyter show them: the escapes go, and of a line
		// redrawn after carriage returns the last drawing is shown.
		shown := splitText(ansiEscape.ReplaceAllString(text, ""))
		for _, l := range shown[:min(len(shown), maxOutputLines)] {
			l = strings.TrimRight(l, "\r")
			l = l[strings.LastIndexByte(l, '\r')+1:]
			lines = append(lines, "  | "+textcut.Clip(l, maxLineShown, " [line cut]"))
		}
		if len(shown) > maxOutputLines {
			lines = append(lines, fmt.Sprintf("  | [%d more lines]", len(shown)-maxOutputLines))
		}
	}
	return lines
}

// decodeMaybe decodes a multi-line text of nbformat that may be absent.
func decodeMaybe(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	return decodeText(raw)
}

// clipLabel makes a name from the file (a stream's, a MIME type) fit on
// one short line.
func clipLabel(s string) string { return textcut.Clip(oneLine(s), 100, "...") }

// oneLine puts s on one line.
func oneLine(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ") }
