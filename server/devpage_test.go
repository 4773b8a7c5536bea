package server_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/browsertest"
	"github.com/trellis-go/trellis/server"
)

// The dev page is off unless asked for, and its path must be a directory.
func TestDevPageIsOffByDefault(t *testing.T) {
	e := newEnv(t)
	assert.Equal(t, http.StatusNotFound, e.call(t, "GET", "/dev/", nil, nil))
	_, err := server.New(e.m, server.WithDevPage("/dev"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"/dev"`)
}

// The page in a real browser: it draws the graph, runs the "ask" graph on
// a new thread, shows the interrupt and answers it from its form, shows
// the state at each checkpoint, forks the first checkpoint and runs it
// again (which asks again), and streams a chat reply token by token.
func TestDevPageDrivesARunWithAnInterruptAndAFork(t *testing.T) {
	b := browsertest.Start(t)
	e := newEnv(t, server.WithDevPage("/dev/"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	js := func(expr string) {
		t.Helper()
		_, err := browsertest.Eval[any](ctx, b, expr)
		require.NoError(t, err, expr)
	}
	wait := func(expr string) {
		t.Helper()
		require.NoError(t, b.WaitUntil(ctx, expr), expr)
	}
	require.NoError(t, b.Open(ctx, e.http.URL+"/dev/?assistant=ask"))
	wait(`document.getElementById("status").textContent === "ready"`)
	wait(`document.querySelector('#graph .node[data-node="ask"]') !== null`)

	js(`document.getElementById("input").value = '{"notes":["q"]}'; document.getElementById("run").click(); true`)
	wait(`!document.getElementById("interrupt-form").hidden`)
	question, err := b.Text(ctx, "#interrupt-value")
	require.NoError(t, err)
	assert.Contains(t, question, "a note?")

	js(`document.getElementById("answer").value = "hello"; document.getElementById("resume").click(); true`)
	wait(`document.getElementById("status").textContent === "done" && document.getElementById("history").textContent.includes("note:hello")`)
	assert.True(t, evalBool(ctx, t, b, `document.getElementById("interrupt-form").hidden`))

	// Fork the thread's first checkpoint (the run's input) and run it
	// again: the node asks again.
	js(`[...document.querySelectorAll("#history .fork")].at(-1).click(); true`)
	wait(`document.getElementById("status").textContent === "waiting for input"`)
	wait(`document.querySelectorAll("#runs li").length === 3 && document.getElementById("history").textContent.includes("(fork)")`)
	assert.False(t, evalBool(ctx, t, b, `document.getElementById("interrupt-form").hidden`), "the fork's run asks again")

	shot, err := b.Screenshot(ctx)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 300)
	if dir := os.Getenv("TRELLIS_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "devpage.png"), shot, 0o644))
	}

	// A chat reply, token by token.
	js(`document.getElementById("assistant").value = "chat"; document.getElementById("assistant").dispatchEvent(new Event("change")); true`)
	wait(`document.querySelector('#graph .node[data-node="agent"]') !== null`)
	js(`document.getElementById("new-thread").click(); true`)
	wait(`document.getElementById("thread-id").textContent !== "" && document.getElementById("history").children.length === 0`)
	js(`document.getElementById("input").value = "hi there"; document.getElementById("run").click(); true`)
	wait(`document.getElementById("status").textContent === "done"`)
	tokens, err := b.Text(ctx, "#tokens")
	require.NoError(t, err)
	assert.Equal(t, "echo: hi there", tokens)
}

func evalBool(ctx context.Context, t *testing.T, b *browsertest.Browser, expr string) bool {
	t.Helper()
	v, err := browsertest.Eval[bool](ctx, b, expr)
	require.NoError(t, err)
	return v
}
