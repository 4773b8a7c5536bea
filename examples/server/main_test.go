package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func post(t *testing.T, url, body string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// The supervisor answers over the API: a wait returns the conversation,
// whose last message is the writer's paragraph, as LangChain messages.
func TestSupervisorAnswersOverTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the supervisor on a worker (-short)")
	}
	svc, err := open(t.Context(), ":memory:", "", false)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.m.Work(ctx) }()
	srv := httptest.NewServer(svc.api)
	defer func() {
		srv.Close()
		stop()
		require.NoError(t, <-done)
		require.NoError(t, svc.close())
	}()

	resp := post(t, srv.URL+"/runs/wait", `{"assistant_id":"supervisor","input":{"messages":[{"type":"human","content":"Explain goroutines."}]}}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var values struct {
		Messages []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&values))
	last := values.Messages[len(values.Messages)-1]
	assert.Equal(t, "ai", last.Type)
	assert.True(t, strings.HasPrefix(last.Content, "Meet the goroutine\n\n"), last.Content)
	assert.Contains(t, last.Content, "The Go runtime schedules goroutines")

	// A stream with subgraphs carries the workers' tokens under their
	// namespaces.
	resp = post(t, srv.URL+"/runs/stream", `{"assistant_id":"supervisor","input":{"messages":"hi"},"stream_mode":"messages-tuple","stream_subgraphs":true}`)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	seen := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			seen[strings.SplitN(name, "|", 3)[0]+"|"+strings.Join(strings.SplitN(name, "|", 3)[1:2], "")] = true
		}
	}
	assert.True(t, seen["messages|"], "the supervisor's tokens: %v", seen)
	assert.True(t, seen["messages|researcher"] || seen["messages|writer"], "a worker's tokens: %v", seen)
}

// The command serves on the address it is given, and with -token refuses
// requests without the token.
func TestCommandServesWithAToken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the command's server (-short)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, io.Discard, []string{"-addr", "127.0.0.1:0", "-token", "s3cret", "-dev"}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("the command stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not start listening within 30s")
	}
	resp := post(t, "http://"+addr+"/assistants/search", `{}`)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = post(t, "http://"+addr+"/assistants/search", `{}`, "Authorization", "Bearer s3cret")
	var list []map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Len(t, list, 1)
	assert.Equal(t, "supervisor", list[0]["assistant_id"])
	resp, err := http.Get("http://" + addr + "/dev/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "-dev serves the dev page")
	cancel()
	require.NoError(t, <-done)
}
