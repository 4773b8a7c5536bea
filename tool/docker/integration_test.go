package docker

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// realDaemon returns the address of a Docker daemon that answers, or skips
// the test. It skips even when CI=true: the machines these tests run on
// have the docker command but no Docker engine.
func realDaemon(t *testing.T) string {
	t.Helper()
	host := cmpOr(os.Getenv("DOCKER_HOST"), DefaultHost)
	c, err := newClient(host, nil)
	if err == nil {
		defer c.close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		err = c.negotiate(ctx)
	}
	if err != nil {
		t.Skipf("skipping the integration test: no Docker daemon answers at %s (DOCKER_HOST or the default socket). "+
			"It skips even when CI=true, because the machines these tests run on have no Docker engine. Error: %v", host, err)
	}
	return host
}

func TestIntegration(t *testing.T) {
	host := realDaemon(t)
	image := cmpOr(os.Getenv("TRELLIS_DOCKER_TEST_IMAGE"), "alpine:3.20")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	box, err := New(ctx, image, WithHost(host), WithPull(), WithMemory(128<<20), WithPidsLimit(64),
		WithReadOnlyRoot(), WithTmpfs("/tmp", 16<<20), WithMount(dir, "/work", false), WithWorkdir("/work"),
		WithKillGrace(500*time.Millisecond))
	if errors.Is(err, ErrImageNotFound) || err != nil && strings.Contains(err.Error(), "could not pull") {
		t.Skipf("skipping: the daemon at %s has no %s and cannot pull it: %v", host, image, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := box.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()

	for _, tc := range []struct {
		command, want string
		code          string
	}{
		{"echo out; echo err >&2; pwd", "out\nerr\n/work\nExit code: 0", ""},
		{"echo hi > /work/f && cat /work/f", "hi\nExit code: 0", ""},
		{"touch /etc/x 2>/dev/null || echo read-only; exit 4", "read-only\nExit code: 4", CodeNonZeroExit},
		{"cat /sys/class/net/*/address | wc -l; ls /sys/class/net", "1\nlo\nExit code: 0", ""},
		{"read line; echo \"[$line]\"", "[]\nExit code: 0", ""},
	} {
		r := bashCall(t, box, tc.command)
		if r.Text() != tc.want || r.ErrorCode != tc.code {
			t.Errorf("%s: %q (%s), want %q", tc.command, r.Text(), r.ErrorCode, tc.want)
		}
	}
	if b, err := os.ReadFile(dir + "/f"); err != nil || string(b) != "hi\n" {
		t.Errorf("the mount: %q %v", b, err)
	}

	start := time.Now()
	r := invoke(ctx, t, box, `{"command":"echo go; sleep 30 & sleep 30; echo never","timeout_ms":1000}`)
	rep := r.Details.(Report)
	if r.ErrorCode != CodeCommandTimeout || rep.Escaped || !strings.HasPrefix(r.Text(), "go\n") || time.Since(start) > 10*time.Second {
		t.Errorf("timeout: %q %+v after %v", r.Text(), rep, time.Since(start))
	}
	r = bashCall(t, box, "ps -o args | grep '[s]leep 30' || echo none")
	if r.Text() != "none\nExit code: 0" {
		t.Errorf("the timed-out command's processes survive: %q", r.Text())
	}
}
