package testserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/temporal/internal/testserver"
)

func TestKeyHashesModuleFilesThenSourcesInNameOrder(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"go.mod": "module m\n", "go.sum": "sums\n", "main.go": "package main\n", "a.go": "package a\n", "notes.txt": "not hashed"}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	sum := sha256.Sum256([]byte("module m\n" + "sums\n" + "package a\n" + "package main\n"))
	key, err := testserver.Key(dir)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(sum[:])[:16], key)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main // changed\n"), 0o600))
	changed, err := testserver.Key(dir)
	require.NoError(t, err)
	assert.NotEqual(t, key, changed, "a change of the sources changes the key")
}

// The tests look for the binary where .ci/devserver puts it.
func TestKeyIsTheBuildScriptsKey(t *testing.T) {
	script, err := filepath.Abs("../../../.ci/devserver")
	require.NoError(t, err)
	if _, err := os.Stat(script); err != nil {
		t.Skip("no .ci/devserver: not in the repository's tree")
	}
	out, err := exec.Command(script, "--key").Output()
	require.NoError(t, err)
	key, err := testserver.Key("../devserver")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSpace(string(out)), key)
}

func TestBinaryPrefersEnvironmentAndNamesBuildCommandWhenAbsent(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600))
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	t.Setenv(testserver.EnvBinary, "")
	_, err := testserver.Binary(dir)
	require.ErrorIs(t, err, testserver.ErrNoBinary)
	assert.ErrorContains(t, err, ".ci/devserver")
	path, perr := testserver.CachePath(dir)
	require.NoError(t, perr)
	assert.ErrorContains(t, err, path, "the error says where it looked")

	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, nil, 0o700))
	got, err := testserver.Binary(dir)
	require.NoError(t, err)
	assert.Equal(t, path, got, "the cache")

	exe := filepath.Join(t.TempDir(), "server")
	require.NoError(t, os.WriteFile(exe, nil, 0o700))
	t.Setenv(testserver.EnvBinary, exe)
	got, err = testserver.Binary(dir)
	require.NoError(t, err)
	assert.Equal(t, exe, got, "the environment before the cache")
}

// startFake starts the test binary as a server saying say.
func startFake(t *testing.T, say string, timeout time.Duration) (*testserver.Server, error) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(envFake, say)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return testserver.Start(ctx, exe, filepath.Join(t.TempDir(), "server.log"))
}

func TestStartReadsAddressAndNamespace(t *testing.T) {
	s, err := startFake(t, "ready 127.0.0.1:7233 temporaltest-1", 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7233", s.HostPort)
	assert.Equal(t, "temporaltest-1", s.Namespace)
	cpu, err := testserver.CPUTime(s.Pid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cpu, time.Duration(0))
	require.NoError(t, s.Stop(), "the server exits when its input closes")
}

func TestStartFailsWhenServerSaysSomethingElse(t *testing.T) {
	_, err := startFake(t, "listening on 7233", 30*time.Second)
	require.ErrorContains(t, err, `the server said "listening on 7233"`)
}

func TestStartFailsWhenServerExits(t *testing.T) {
	_, err := startFake(t, "exit", 30*time.Second)
	require.ErrorContains(t, err, "exited before it was ready")
}

func TestStartGivesUpAtDeadline(t *testing.T) {
	_, err := startFake(t, "", 200*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestCPUTimeGrowsWithWork(t *testing.T) {
	before, err := testserver.CPUTime(os.Getpid())
	require.NoError(t, err)
	// Spin until the kernel has counted a tick or more (10 ms).
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		after, err := testserver.CPUTime(os.Getpid())
		require.NoError(t, err)
		if after > before {
			return
		}
	}
	t.Fatal("no CPU time counted in 10 s of spinning")
}
