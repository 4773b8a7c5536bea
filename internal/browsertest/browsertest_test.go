package browsertest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/browsertest"
)

// page fills its list a while after it loaded, from a script, as a page
// that streams a run does.
const page = `<!doctype html><html><body><ul id="items"></ul><script>
setTimeout(() => {
  for (const t of ["one", "two"]) {
    const li = document.createElement("li"); li.textContent = t;
    document.getElementById("items").append(li);
  }
  document.body.dataset.done = "yes";
}, 300);
</script></body></html>`

func serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A test waits for what a page's script does after the page loaded, then
// reads the page as it is: its text, its HTML, a value of its script, and
// a screenshot.
func TestWaitsForThePageThenReadsIt(t *testing.T) {
	b := browsertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Open(ctx, serve(t)))
	require.NoError(t, b.WaitUntil(ctx, `document.body.dataset.done === "yes"`))

	text, err := b.Text(ctx, "#items")
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo", text)
	html, err := b.HTML(ctx, "#items")
	require.NoError(t, err)
	assert.Equal(t, `<ul id="items"><li>one</li><li>two</li></ul>`, html)
	n, err := browsertest.Eval[int](ctx, b, `document.querySelectorAll("li").length`)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	png, err := b.Screenshot(ctx)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG image")
}

// A condition the page never meets ends the wait at the deadline, with an
// error that says what was waited for.
func TestWaitEndsAtTheDeadline(t *testing.T) {
	b := browsertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Open(ctx, serve(t)))
	short, stop := context.WithTimeout(ctx, 500*time.Millisecond)
	defer stop()
	start := time.Now()
	err := b.WaitUntil(short, `document.title === "never"`)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `document.title === "never"`)
	assert.Less(t, time.Since(start), 10*time.Second)
}

// A wait outlives a navigation of the page: the condition is met on the
// page the first one moves to.
func TestWaitOutlivesANavigation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Query().Get("second") == "" {
			_, _ = io.WriteString(w, `<!doctype html><body>first<script>setTimeout(() => { location.search = "?second=1" }, 200)</script></body>`)
			return
		}
		_, _ = io.WriteString(w, `<!doctype html><body><p id="second">second</p></body>`)
	}))
	defer srv.Close()
	b := browsertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Open(ctx, srv.URL))
	require.NoError(t, b.WaitUntil(ctx, `document.getElementById("second") !== null`))
	text, err := b.Text(ctx, "#second")
	require.NoError(t, err)
	assert.Equal(t, "second", text)
}
