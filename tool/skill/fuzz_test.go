package skill_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/trellis-go/trellis/tool/skill"
)

// FuzzParse feeds Parse what anyone could write in a SKILL.md: it never
// panics, and what it accepts keeps the rules.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		skillMD("pdf-tools", "Work with PDFs.", "# Body"),
		"\xEF\xBB\xBF---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n",
		"---\nname: a\ndescription: >\n  folded\n  text\nmetadata: {k: v}\nallowed-tools: [x, y]\n---\n",
		"---\nx: &a [*a]\nname: *a\ndescription: d\n---\n",
		"---\na: &a [1,2]\nb: &b [*a,*a,*a]\nc: [*b,*b,*b]\nname: x\ndescription: y\n---\n",
		"---\n!!map {? [a]: b}\n---\n",
		"---\nname: a\n---",
		"---\n",
		"no front matter",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := skill.Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if !skill.ValidName(s.Name) {
			t.Fatalf("accepted the name %q", s.Name)
		}
		if strings.TrimSpace(s.Description) == "" || utf8.RuneCountInString(s.Description) > skill.MaxDescriptionLength {
			t.Fatalf("accepted the description %q", s.Description)
		}
		if !utf8.ValidString(s.Body) || s.Body != strings.TrimRightFunc(s.Body, unicode.IsSpace) {
			t.Fatalf("a body that is not clean text: %q", s.Body)
		}
	})
}
