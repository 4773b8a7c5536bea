package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the MCP reference server, a Node.js process, when installed (skipped with -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, ""))
	s := out.String()
	t.Log(s)
	assert.Contains(t, s, `to_fahrenheit {"celsius": 21} -> {"celsius":21,"fahrenheit":69.8} (success)`)
	assert.Contains(t, s, `"name":"weather"`)
	assert.Contains(t, s, `mcp_call_tool -> {"celsius":-40,"fahrenheit":-40}`)

	if _, err := findEverything(""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the reference server must be installed in CI: %v", err)
		}
		assert.Contains(t, s, "skipped: ")
		t.Skipf("reference server part not checked: %v", err)
	}
	assert.Contains(t, s, `get-sum {"a": 19, "b": 23} -> The sum of 19 and 23 is 42. (success)`)
	assert.Contains(t, s, `echo {"message": "hello from Trellis"} -> Echo: hello from Trellis (success)`)
	assert.Contains(t, s, `"name":"everything"`)
}

func TestMissingReferenceServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Setenv("PATH", "") // no node: the reference server part is skipped with a message
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, ""))
	assert.Contains(t, out.String(), "skipped: the reference server runs on Node.js, which is not installed")
	assert.Contains(t, out.String(), `mcp_call_tool -> {"celsius":-40,"fahrenheit":-40}`)
}

func TestCallReportsFailures(t *testing.T) {
	ctx := context.Background()
	tools, err := weatherTools().Tools(ctx)
	require.NoError(t, err)

	r, err := call(ctx, "weather", tools, "to_fahrenheit", `{"celsius": 100}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"celsius":100,"fahrenheit":212}`, r.Text())

	_, err = call(ctx, "weather", tools, "to_kelvin", `{}`)
	require.EqualError(t, err, `toolset "weather" has no tool "to_kelvin"`)

	_, err = call(ctx, "weather", tools, "to_fahrenheit", `{"celsius": "hot"}`)
	require.ErrorContains(t, err, `weather: to_fahrenheit {"celsius": "hot"} failed: `)
}
