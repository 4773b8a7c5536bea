package webfetch

import (
	"os"
	"strings"
	"testing"
)

// FuzzArticleText feeds pages to the article finder and the conversion
// after it: they never panic, the text keeps the conversion's shape, and
// the same page gives the same text.
func FuzzArticleText(f *testing.F) {
	for _, name := range []string{"testdata/article.html", "testdata/chrome/news.html", "testdata/chrome/blog.html"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("<article><p>" + strings.Repeat("word, ", 100) + "</p></article><nav>x</nav>")
	f.Fuzz(func(t *testing.T, page string) {
		title, text, _ := articleText(page, nil, 0)
		if strings.Contains(title, "\n") || strings.Contains(text, "\n\n\n") {
			t.Fatalf("title %q, text %q", title, text)
		}
		title2, text2, _ := articleText(page, nil, 0)
		if title2 != title || text2 != text {
			t.Fatal("not deterministic")
		}
	})
}
