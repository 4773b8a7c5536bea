// Package browsertest drives a headless Chromium from tests: a test starts
// the browser, opens a page, waits for conditions on it with a deadline,
// and reads what the page shows (its text, its HTML, a screenshot).
//
// It is for tests only, and lives under internal/ so that the browser
// driver it is built on, chromedp, never reaches the packages users import.
// chromedp was chosen over driving the browser's command line (the
// --dump-dom and --virtual-time-budget flags) because a test must wait for
// what the page shows, not for a time budget to run out: the page's
// network and scripts take as long as they take.
//
// A test calls Start, which skips the test when Chromium is not installed
// (or with -short) and fails it when the environment variable CI is
// "true", since CI installs it. The browser is closed when the test ends;
// if the test failed, a screenshot of the page is saved in the test's
// artifact directory (go test -artifacts keeps it).
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"

	"github.com/trellis-go/trellis/internal/pause"
)

// DefaultPath is where Start looks for Chromium first (the Debian package
// chromium installs it there); after it, the PATH is searched for
// "chromium".
const DefaultPath = "/usr/bin/chromium"

// StartTimeout bounds how long Start waits for the browser to answer.
const StartTimeout = 30 * time.Second

// flags are the command-line switches Chromium is started with, besides a
// fresh profile directory (which chromedp makes and removes): headless,
// without the sandbox (tests run as root in containers), without a GPU,
// and without the background traffic of a desktop browser (component and
// sync updates, QUIC probes, first-run pages), so that the page under test
// is all the browser talks to.
var flags = [...]string{
	"headless",
	"no-sandbox",
	"disable-gpu",
	"disable-quic",
	"no-first-run",
	"disable-background-networking",
	"disable-component-update",
	"disable-sync",
}

// Browser is a headless Chromium started for one test, with one tab.
type Browser struct {
	t   testing.TB
	tab context.Context // chromedp's context of the tab

	mu       sync.Mutex
	finished bool // the test ended: chromedp's messages are dropped
}

// Path returns the Chromium executable Start would run, or "" when there
// is none.
func Path() string {
	if st, err := os.Stat(DefaultPath); err == nil && !st.IsDir() {
		return DefaultPath
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// Start starts headless Chromium for t and returns it; the browser is
// closed when t ends. Without Chromium the test is skipped, with a message
// saying how to install it, unless CI is "true", where it fails. With
// -short it is skipped.
func Start(t testing.TB) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("browsertest: -short: the page is not tried in a browser")
	}
	path := Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browsertest: no Chromium at %s or in PATH; CI must install the Debian package chromium", DefaultPath)
		}
		t.Skipf("browsertest: no Chromium at %s or in PATH (apt-get install chromium): the page is not tried in a browser", DefaultPath)
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path)}
	for _, f := range flags {
		opts = append(opts, chromedp.Flag(f, true))
	}
	output := &lockedWriter{}
	opts = append(opts, chromedp.CombinedOutput(output))
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{t: t}
	tab, closeTab := chromedp.NewContext(alloc, chromedp.WithErrorf(b.logf), chromedp.WithLogf(func(string, ...any) {}))
	b.tab = tab
	t.Cleanup(func() {
		b.mu.Lock()
		b.finished = true
		b.mu.Unlock()
		closeTab()
		stopAlloc() // waits for the browser's processes to end
	})

	// The first action starts the browser; it is bound to the tab's
	// context, so the wait for it is bounded here.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab, chromedp.Navigate("about:blank")) }()
	timer := time.NewTimer(StartTimeout)
	defer timer.Stop()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("browsertest: starting %s: %v\n%s", path, err, output.String())
		}
	case <-timer.C:
		closeTab()
		<-started
		t.Fatalf("browsertest: %s did not start within %v\n%s", path, StartTimeout, output.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			b.saveScreenshot()
		}
	})
	return b
}

// logf reports chromedp's errors while the test runs.
func (b *Browser) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.finished {
		b.t.Logf("chromedp: "+format, args...)
	}
}

// run runs action in the tab, within ctx's deadline and cancellation.
func run[T any](ctx context.Context, b *Browser, action chromedp.Action[T]) (T, error) {
	tab, cancel := context.WithCancel(b.tab)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		var stop context.CancelFunc
		tab, stop = context.WithDeadline(tab, d)
		defer stop()
	}
	defer context.AfterFunc(ctx, cancel)()
	v, err := chromedp.Run(tab, action)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return v, err
}

// Open loads url in the tab and waits for its load event and its body.
func (b *Browser) Open(ctx context.Context, url string) error {
	if _, err := run(ctx, b, chromedp.Steps(chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))); err != nil {
		return fmt.Errorf("browsertest: opening %s: %w", url, err)
	}
	return nil
}

// WaitVisible waits until an element matching the CSS selector is visible,
// or ctx ends.
func (b *Browser) WaitVisible(ctx context.Context, selector string) error {
	if _, err := run(ctx, b, chromedp.WaitVisible(chromedp.CSS(selector))); err != nil {
		return fmt.Errorf("browsertest: waiting for %q to be visible: %w", selector, err)
	}
	return nil
}

// WaitUntil waits until the JavaScript expression is truthy in the page,
// checking it on every change of the page's DOM, or until ctx ends.
func (b *Browser) WaitUntil(ctx context.Context, expression string) error {
	// The poll's own timeout is off: ctx's deadline bounds the wait.
	poll := chromedp.Poll[chromedp.Void](expression, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(0))
	for {
		_, err := run(ctx, b, poll)
		if err == nil {
			return nil
		}
		// A poll is bound to the page's JavaScript context, which a
		// navigation replaces (and which chromedp may learn of late):
		// the poll starts again in the new one, a moment later.
		if contextReplaced(err) && ctx.Err() == nil {
			if pause.Sleep(ctx, 20*time.Millisecond) == nil {
				continue
			}
		}
		return fmt.Errorf("browsertest: waiting for %s: %w", expression, err)
	}
}

// contextReplaced reports whether err says the page's JavaScript context
// went away under an action.
func contextReplaced(err error) bool {
	pe, ok := errors.AsType[*cdproto.Error](err)
	if !ok {
		return false
	}
	for _, msg := range []string{"Cannot find context", "Execution context was destroyed", "Inspected target navigated or closed"} {
		if strings.Contains(pe.Message, msg) {
			return true
		}
	}
	return false
}

// Text returns the visible text of the first element matching the CSS
// selector (as the page renders it, innerText), waiting for it to exist.
func (b *Browser) Text(ctx context.Context, selector string) (string, error) {
	s, err := run(ctx, b, chromedp.Text(chromedp.CSS(selector), chromedp.NodeReady))
	if err != nil {
		return "", fmt.Errorf("browsertest: reading the text of %q: %w", selector, err)
	}
	return s, nil
}

// HTML returns the outer HTML of the first element matching the CSS
// selector, waiting for it to exist.
func (b *Browser) HTML(ctx context.Context, selector string) (string, error) {
	s, err := run(ctx, b, chromedp.OuterHTML(chromedp.CSS(selector), chromedp.NodeReady))
	if err != nil {
		return "", fmt.Errorf("browsertest: reading the HTML of %q: %w", selector, err)
	}
	return s, nil
}

// Eval evaluates a JavaScript expression in the page and returns its
// value, decoded from JSON into T.
func Eval[T any](ctx context.Context, b *Browser, expression string) (T, error) {
	v, err := run(ctx, b, chromedp.Evaluate[T](expression))
	if err != nil {
		return v, fmt.Errorf("browsertest: evaluating %s: %w", expression, err)
	}
	return v, nil
}

// Screenshot returns a PNG image of the whole page.
func (b *Browser) Screenshot(ctx context.Context) ([]byte, error) {
	png, err := run(ctx, b, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, fmt.Errorf("browsertest: taking a screenshot: %w", err)
	}
	return png, nil
}

// saveScreenshot saves a screenshot of the page of a failed test in its
// artifact directory.
func (b *Browser) saveScreenshot() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	png, err := b.Screenshot(ctx)
	if err != nil {
		b.t.Logf("browsertest: no screenshot of the failed page: %v", err)
		return
	}
	file := filepath.Join(b.t.ArtifactDir(), "page.png")
	if err := os.WriteFile(file, png, 0o600); err != nil {
		b.t.Logf("browsertest: saving the screenshot: %v", err)
		return
	}
	b.t.Logf("browsertest: a screenshot of the page is at %s", file)
}

// lockedWriter serialises the writes of the browser's output, which
// chromedp copies from its own goroutine.
type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// String returns what was written.
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
