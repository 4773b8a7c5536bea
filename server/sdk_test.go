package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/trellis-go/trellis/server"
	storememory "github.com/trellis-go/trellis/store/memory"
)

// sdkModules finds the directory whose node_modules holds the pinned
// LangGraph SDK: .ci at the repository's root.
func sdkModules(t *testing.T) (string, bool) {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		return "", false
	}
	ci := filepath.Join(dir, ".ci")
	_, err = os.Stat(filepath.Join(ci, "node_modules", "@langchain", "langgraph-sdk", "package.json"))
	return ci, err == nil
}

// The official LangGraph SDK (@langchain/langgraph-sdk, pinned in
// .ci/package.json) drives the server through testdata/sdk/compat.mjs:
// every endpoint, every stream mode, an interrupt and its resumes, a
// reconnect in the middle of a stream, each multitask strategy. It needs
// Node and `cd .ci && npm ci`; without them the test is skipped, except in
// CI, where it fails.
func TestOfficialSDKDrivesTheServer(t *testing.T) {
	if testing.Short() {
		t.Skip("the SDK suite runs Node and takes seconds (-short)")
	}
	node, err := exec.LookPath("node")
	ci := os.Getenv("CI") == "true"
	if err != nil {
		if ci {
			t.Fatal("node is not installed; CI needs it for the SDK compatibility suite")
		}
		t.Skip("node is not installed: the SDK compatibility suite is skipped")
	}
	modules, ok := sdkModules(t)
	if !ok {
		if ci {
			t.Fatal("the LangGraph SDK is not installed under .ci/node_modules: run `cd .ci && npm ci`")
		}
		t.Skip("the LangGraph SDK is not installed: run `cd .ci && npm ci` to run the compatibility suite")
	}
	for _, backend := range []string{onMemory, onSQLite} {
		t.Run(backend, func(t *testing.T) {
			e := newEnvOn(t, backend, server.WithStore(storememory.New()))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "sdk", "compat.mjs"), e.http.URL, modules)
			out, err := cmd.CombinedOutput()
			t.Logf("compat.mjs:\n%s", out)
			if err != nil {
				t.Fatalf("the SDK suite failed: %v", err)
			}
		})
	}
}
