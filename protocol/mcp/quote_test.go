package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
)

// Errors quote names and URLs that may come from a server or a model by a
// bounded prefix, never in full.
func TestErrorsQuoteABoundedPrefix(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	cut := `"` + strings.Repeat("x", maxQuoted) + `…"`
	bounded := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 1000, "the error repeats a name in full: %.300s", err.Error())
	}

	for _, err := range []error{
		&ConnectError{Server: huge, Transport: TransportStreamableHTTP, Stage: "connect", Err: errors.New("refused")},
		&CallError{Server: huge, Method: "call " + huge, Attempts: 1, Err: errors.New("lost")},
		&ToolError{Server: huge, Tool: huge, Message: "failed"},
	} {
		bounded(t, err)
		assert.Contains(t, err.Error(), cut)
	}
	assert.Contains(t, (&CallError{Server: "s", Method: "call " + huge, Err: errors.New("lost")}).Error(),
		`: call `+strings.Repeat("x", maxQuoted)+`…: lost`)

	err := Config{Name: huge, Transport: Transport(huge), Headers: map[string]string{huge + " ": "v"}}.Validate()
	bounded(t, err)
	assert.Contains(t, err.Error(), "server "+cut)
	err = Config{URL: "https://example.com/" + huge + "\x7f"}.Validate()
	bounded(t, err)
	err = Config{URL: "ftp://example.com/" + huge}.Validate()
	bounded(t, err)

	ts, err := New(Config{Name: huge, URL: "http://127.0.0.1:1/mcp"})
	require.NoError(t, err)
	require.NoError(t, ts.Close())
	_, err = ts.Tools(context.Background())
	bounded(t, err)
	assert.ErrorIs(t, err, ErrClosed)

	_, err = NewServer(context.Background(), tool.NewStatic("fixture", fixtureTools()...), WithAllowedOrigins("https://"+huge+"/x"))
	bounded(t, err)
	assert.ErrorIs(t, err, ErrServe)
}
