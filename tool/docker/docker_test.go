package docker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func newBox(t *testing.T, f *fakeDaemon, opts ...Option) *Toolset {
	t.Helper()
	box, err := New(context.Background(), "alpine:3.20", append([]Option{WithHost(f.host)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = box.Close() })
	return box
}

func invoke(ctx context.Context, t *testing.T, box *Toolset, args string) tool.Result {
	t.Helper()
	tools, err := box.Tools(ctx)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	return tool.Invoke(ctx, tools[0], model.ToolCall{ID: "call-1", Name: BashName, Arguments: []byte(args)})
}

func bashCall(t *testing.T, box *Toolset, command string) tool.Result {
	t.Helper()
	b, _ := json.Marshal(BashArgs{Command: command})
	return invoke(context.Background(), t, box, string(b))
}

func TestNewCreatesTheSandbox(t *testing.T) {
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			f := newFake(t, network)
			hostDir := filepath.Join(t.TempDir(), "project")
			box := newBox(t, f,
				WithName("coder bot"),
				WithMemory(256<<20), WithCPUs(1.5), WithPidsLimit(64),
				WithReadOnlyRoot(), WithWorkdir("/work"),
				WithMount(hostDir, "/work", false), WithMount("/etc/ssl", "/etc/ssl/", true),
				WithTmpfs("/tmp", 64<<20),
				WithEnv("LANG=C.UTF-8"), WithUser("1000:1000"))
			if box.APIVersion() != "1.47" || box.Workdir() != "/work" || box.Host() != f.host {
				t.Errorf("version %q workdir %q host %q", box.APIVersion(), box.Workdir(), box.Host())
			}

			var routes []string
			for _, r := range f.requests("") {
				routes = append(routes, r.Method+" "+r.Path)
			}
			id := box.ContainerID()
			want := []string{
				"GET /_ping",
				"GET /v1.47/images/alpine:3.20/json",
				"POST /v1.47/containers/create",
				"POST /v1.47/containers/" + id + "/start",
			}
			if !slices.Equal(routes, want) {
				t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(routes, "\n"), strings.Join(want, "\n"))
			}
			create := f.requests("POST /containers/create")[0]
			if name := create.Query.Get("name"); !strings.HasPrefix(name, "trellis-coder-bot-") {
				t.Errorf("container name %q", name)
			}
			var got map[string]any
			if err := json.Unmarshal(create.Body, &got); err != nil {
				t.Fatal(err)
			}
			wantBody := map[string]any{
				"Image":        "alpine:3.20",
				"Entrypoint":   []any{"sh"},
				"Cmd":          []any{"-c", keepAlive[2]},
				"WorkingDir":   "/work",
				"Env":          []any{"LANG=C.UTF-8"},
				"User":         "1000:1000",
				"Labels":       map[string]any{"org.trellis-go.toolset": "coder bot"},
				"Tty":          false,
				"OpenStdin":    false,
				"AttachStdin":  false,
				"AttachStdout": false,
				"AttachStderr": false,
				"HostConfig": map[string]any{
					"Memory":         float64(256 << 20),
					"MemorySwap":     float64(256 << 20),
					"NanoCpus":       float64(1.5e9),
					"PidsLimit":      float64(64),
					"NetworkMode":    "none",
					"ReadonlyRootfs": true,
					"Mounts": []any{
						map[string]any{"Type": "bind", "Source": hostDir, "Target": "/work", "ReadOnly": false},
						map[string]any{"Type": "bind", "Source": "/etc/ssl", "Target": "/etc/ssl", "ReadOnly": true},
					},
					"Tmpfs":       map[string]any{"/tmp": "rw,nosuid,nodev,size=67108864"},
					"CapDrop":     []any{"ALL"},
					"SecurityOpt": []any{"no-new-privileges"},
					"Init":        true,
					"AutoRemove":  true,
				},
			}
			gotJSON, _ := json.MarshalIndent(got, "", " ")
			wantJSON, _ := json.MarshalIndent(wantBody, "", " ")
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("create body:\n%s\nwant:\n%s", gotJSON, wantJSON)
			}

			if err := box.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			del := f.requests("DELETE /containers/")
			if len(del) != 1 || del[0].Path != "/v1.47/containers/"+id || del[0].Query.Get("force") != "true" || del[0].Query.Get("v") != "true" {
				t.Errorf("removal requests: %+v", del)
			}
			if err := box.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if n := len(f.requests("DELETE /containers/")); n != 1 {
				t.Errorf("%d removals after two Closes, want 1", n)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	var cfg containerConfig
	if err := json.Unmarshal(f.requests("POST /containers/create")[0].Body, &cfg); err != nil {
		t.Fatal(err)
	}
	h := cfg.HostConfig
	if h.Memory != DefaultMemory || h.MemorySwap != DefaultMemory || h.NanoCPUs != 1e9 || h.PidsLimit == nil || *h.PidsLimit != DefaultPidsLimit ||
		h.NetworkMode != "none" || h.ReadonlyRootfs || len(h.Mounts) != 0 || cfg.WorkingDir != "" || cfg.User != "" {
		t.Errorf("defaults: %+v %+v", cfg, h)
	}
	if box.Workdir() != "/home" { // the image's
		t.Errorf("workdir %q, want the image's /home", box.Workdir())
	}
	tools, _ := box.Tools(context.Background())
	if md := tool.MetadataOf(tools[0]); !md.Destructive || md.OpenWorld || md.ReadOnly {
		t.Errorf("metadata %+v: want destructive, not open-world", md)
	}
	if d := tools[0].Definition().Description; !strings.Contains(d, "no network access") || !strings.Contains(d, "/home") {
		t.Errorf("description: %s", d)
	}
}

func TestNetworkMakesBashOpenWorld(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithNetwork("bridge"))
	tools, _ := box.Tools(context.Background())
	if md := tool.MetadataOf(tools[0]); !md.Destructive || !md.OpenWorld {
		t.Errorf("metadata %+v: want destructive and open-world", md)
	}
}

func TestVersionNegotiation(t *testing.T) {
	for _, tc := range []struct {
		daemon, want, err string
	}{
		{"1.47", "1.47", ""},
		{"1.41", "1.41", ""},
		{"1.99", maxAPIVersion, ""},
		{"1.24", "", "version 1.25 or later"},
		{"", "", "no Api-Version header"},
		{"one", "", "malformed API version"},
	} {
		t.Run(tc.daemon, func(t *testing.T) {
			f := newFake(t, "tcp")
			f.version = tc.daemon
			box, err := New(context.Background(), "alpine:3.20", WithHost(f.host))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), f.host) {
					t.Fatalf("err %v, want one naming %q and the host", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close()
			if box.APIVersion() != tc.want {
				t.Errorf("version %q, want %q", box.APIVersion(), tc.want)
			}
			if r := f.requests("GET /images/")[0]; r.Path != "/v"+tc.want+"/images/alpine:3.20/json" {
				t.Errorf("path %q", r.Path)
			}
		})
	}
}

func TestMissingImage(t *testing.T) {
	f := newFake(t, "unix")
	_, err := New(context.Background(), "python:3.99", WithHost(f.host))
	if !errors.Is(err, ErrImageNotFound) || !strings.Contains(err.Error(), "docker pull python:3.99") || !strings.Contains(err.Error(), f.host) {
		t.Fatalf("err %v", err)
	}
	if n := len(f.requests("POST /containers/create")); n != 0 {
		t.Errorf("%d containers created", n)
	}

	t.Run("pull", func(t *testing.T) {
		f := newFake(t, "unix")
		f.pull = `{"status":"Pulling from library/busybox"}` + "\n" + `{"status":"Download complete"}` + "\n"
		box := newBox(t, f, WithPull())
		_ = box
		pulls := f.requests("POST /images/create")
		if len(pulls) != 0 {
			t.Fatalf("pulled an image the daemon has: %+v", pulls)
		}
		box2, err := New(context.Background(), "busybox", WithHost(f.host), WithPull())
		if err != nil {
			t.Fatal(err)
		}
		defer box2.Close()
		pulls = f.requests("POST /images/create")
		if len(pulls) != 1 || pulls[0].Query.Get("fromImage") != "busybox" || pulls[0].Query.Get("tag") != "latest" {
			t.Errorf("pull requests %+v", pulls)
		}
	})
	t.Run("pull fails", func(t *testing.T) {
		f := newFake(t, "unix")
		f.pull = `{"status":"Pulling"}` + "\n" + `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}` + "\n"
		_, err := New(context.Background(), "localhost:5000/app:v9", WithHost(f.host), WithPull())
		if err == nil || !strings.Contains(err.Error(), "manifest unknown") || !strings.Contains(err.Error(), "localhost:5000/app:v9") {
			t.Fatalf("err %v", err)
		}
		if r := f.requests("POST /images/create"); len(r) != 1 || r[0].Query.Get("tag") != "" || r[0].Query.Get("fromImage") != "localhost:5000/app:v9" {
			t.Errorf("pull requests %+v", r)
		}
	})
}

func TestDaemonErrors(t *testing.T) {
	t.Run("create 500", func(t *testing.T) {
		f := newFake(t, "unix")
		f.fail["POST /containers/create"] = fakeFailure{500, "invalid mount config for type \"bind\": bind source path does not exist: /nope"}
		_, err := New(context.Background(), "alpine:3.20", WithHost(f.host), WithMount("/nope", "/work", false))
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 500 || !strings.Contains(err.Error(), "bind source path does not exist") || !strings.Contains(err.Error(), f.host) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("start fails: removed", func(t *testing.T) {
		f := newFake(t, "unix")
		f.fail["POST /containers/[^/]+/start"] = fakeFailure{500, "failed to create task: docker-init not found"}
		_, err := New(context.Background(), "alpine:3.20", WithHost(f.host))
		if err == nil || !strings.Contains(err.Error(), "docker-init not found") {
			t.Fatalf("err %v", err)
		}
		f.mu.Lock()
		n := len(f.containers)
		f.mu.Unlock()
		if n != 0 || len(f.requests("DELETE /containers/")) != 1 {
			t.Errorf("the container New could not start was not removed: %d left", n)
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		host := "unix://" + filepath.Join(t.TempDir(), "none.sock")
		_, err := New(context.Background(), "alpine:3.20", WithHost(host))
		if err == nil || !strings.Contains(err.Error(), "no Docker daemon answers at "+host) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		f := newFake(t, "unix")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := New(ctx, "alpine:3.20", WithHost(f.host)); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("container gone", func(t *testing.T) {
		f := newFake(t, "unix")
		box := newBox(t, f)
		f.mu.Lock()
		f.containers[box.ContainerID()] = false
		f.mu.Unlock()
		r := bashCall(t, box, "echo hi")
		if !r.IsError || !errors.Is(r.Err, ErrContainerGone) || !isStatus(r.Err, http.StatusConflict) || !strings.Contains(r.Text(), "not running any more") {
			t.Fatalf("result %+v: %s", r, r.Text())
		}
	})
}

func TestOptionsAndHosts(t *testing.T) {
	_, err := New(context.Background(), "", WithMemory(1), WithCPUs(0), WithPidsLimit(2), WithWorkdir("rel"),
		WithMount("rel", "/", false), WithEnv("NOEQUALS"), WithTimeout(-1), WithNetwork(""), WithTmpfs("/t", 0))
	if !errors.Is(err, tool.ErrInvalidTool) {
		t.Fatalf("err %v", err)
	}
	for _, s := range []string{"WithMemory", "WithCPUs", "WithPidsLimit", "WithWorkdir", "WithMount", "WithEnv", "WithTimeout", "WithNetwork", "WithTmpfs", "image is empty"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not name %s: %v", s, err)
		}
	}
	for host, want := range map[string]string{
		"fd://3":                "only unix://, tcp:// and ssh://",
		"npipe:////./pipe/dock": "named pipes",
		"ssh://me@box/path":     "not of the form ssh://",
		"unix://":               "not of the form unix:///",
		"tcp://":                "not of the form",
	} {
		if _, err := New(context.Background(), "alpine", WithHost(host)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("host %q: err %v, want %q", host, err, want)
		}
	}
	t.Setenv("DOCKER_HOST", "tcp://127.0.0.1:1")
	if _, err := New(context.Background(), "alpine"); err == nil || !strings.Contains(err.Error(), "tcp://127.0.0.1:1") {
		t.Errorf("DOCKER_HOST not used: %v", err)
	}
	for ref, want := range map[string]bool{"alpine": false, "alpine:3": true, "localhost:5000/app": false, "localhost:5000/app:v1": true, "app@sha256:ab": true} {
		if hasTagOrDigest(ref) != want {
			t.Errorf("hasTagOrDigest(%q) != %v", ref, want)
		}
	}
}

func TestBash(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	r := bashCall(t, box, "echo hello")
	if r.IsError || r.Text() != "hello\nExit code: 0" {
		t.Fatalf("result %q (error %v)", r.Text(), r.Err)
	}
	rep := r.Details.(Report)
	if rep.State != StateExited || rep.ExitCode != 0 || rep.OutputBytes != 6 || rep.ExecID == "" {
		t.Errorf("report %+v", rep)
	}
	create := f.requests("POST /containers/" + box.ContainerID() + "/exec")
	if len(create) != 1 {
		t.Fatalf("exec creations %+v", create)
	}
	var cfg map[string]any
	_ = json.Unmarshal(create[0].Body, &cfg)
	env, _ := cfg["Env"].([]any)
	if len(env) != 1 || !strings.HasPrefix(env[0].(string), markerVar+"=") || len(env[0].(string)) != len(markerVar)+1+16 {
		t.Errorf("exec env %v", env)
	}
	delete(cfg, "Env")
	want := map[string]any{"AttachStdin": false, "AttachStdout": true, "AttachStderr": true, "Tty": false, "Cmd": []any{"sh", "-c", "echo hello"}}
	if fmt.Sprint(cfg) != fmt.Sprint(want) {
		t.Errorf("exec config %v, want %v", cfg, want)
	}
	start := f.requests("POST /exec/" + rep.ExecID + "/start")
	if len(start) != 1 || strings.TrimSpace(string(start[0].Body)) != `{"Detach":false,"Tty":false}` {
		t.Errorf("exec start %+v", start)
	}
	if len(f.requests("GET /exec/"+rep.ExecID+"/json")) == 0 {
		t.Error("the exit code was not read from the exec")
	}
}

func TestBashShell(t *testing.T) {
	f := newFake(t, "tcp")
	box := newBox(t, f, WithShell("bash", "-o", "pipefail", "-c"))
	bashCall(t, box, "echo x")
	var cfg execConfig
	_ = json.Unmarshal(f.requests("POST /containers/" + box.ContainerID() + "/exec")[0].Body, &cfg)
	if !slices.Equal(cfg.Cmd, []string{"bash", "-o", "pipefail", "-c", "echo x"}) {
		t.Errorf("cmd %q", cfg.Cmd)
	}
}

func TestBashFailures(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithMaxOutput(100))

	r := bashCall(t, box, "fail")
	var ee *ExitError
	if !r.IsError || r.ErrorCode != CodeNonZeroExit || !errors.As(r.Err, &ee) || ee.Code != 3 || r.Text() != "checking\nboom\nExit code: 3" {
		t.Errorf("fail: %q %v %q", r.Text(), r.Err, r.ErrorCode)
	}

	r = bashCall(t, box, "interleave")
	if r.IsError || r.Text() != "abcd\ne\nExit code: 0" {
		t.Errorf("interleave: %q", r.Text())
	}

	r = bashCall(t, box, "big 5000")
	rep := r.Details.(Report)
	if r.IsError || !strings.Contains(r.Text(), "\n[... 4900 bytes of output left out ...]\n") || rep.OutputBytes != 5000 || rep.Omitted != 4900 {
		t.Errorf("big: %q %+v", r.Text(), rep)
	}

	r = bashCall(t, box, "systemerr")
	if !r.IsError || !strings.Contains(r.Text(), "OCI runtime exec failed") {
		t.Errorf("systemerr: %q", r.Text())
	}

	r = bashCall(t, box, "linger")
	if r.IsError || r.Text() != "done\nExit code: 0" {
		t.Errorf("linger: %q %v", r.Text(), r.Err)
	}

	r = invoke(context.Background(), t, box, `{"command":"  "}`)
	if !r.IsError || r.ErrorCode != tool.CodeInvalidArguments {
		t.Errorf("empty command: %+v", r)
	}
}

// killRequests returns the signals sent by kill execs, with their tags.
func killRequests(f *fakeDaemon) []string {
	var out []string
	for _, r := range f.requests("POST /containers/") {
		var cfg execConfig
		if json.Unmarshal(r.Body, &cfg) == nil && len(cfg.Cmd) == 6 && cfg.Cmd[3] == killArgv0 {
			if len(cfg.Env) != 0 {
				out = append(out, "tagged kill exec!")
			}
			out = append(out, cfg.Cmd[4]+" "+cfg.Cmd[5])
		}
	}
	return out
}

// execTag returns the tag of the nth exec created (from 0).
func execTag(t *testing.T, f *fakeDaemon, n int) string {
	t.Helper()
	var execs []fakeReq
	for _, r := range f.requests("POST /containers/") {
		if strings.HasSuffix(r.Path, "/exec") {
			execs = append(execs, r)
		}
	}
	var cfg execConfig
	_ = json.Unmarshal(execs[n].Body, &cfg)
	if len(cfg.Env) != 1 {
		t.Fatalf("exec %d env %q", n, cfg.Env)
	}
	return strings.TrimPrefix(cfg.Env[0], markerVar+"=")
}

// timedOut makes a fake daemon and a toolset with opts, and runs command
// with a timeout of d in it. On a loaded machine the timeout may fire
// before the command's exec was created or its program started: then it
// tries again, with new ones and twice the timeout, until a deadline. It
// returns the fake, the result, its report and the timeout of the first
// run whose command had started when it was stopped; with lateKills, also
// one whose program started only after the first kill.
func timedOut(t *testing.T, command string, d time.Duration, lateKills bool, opts ...Option) (*fakeDaemon, tool.Result, Report, time.Duration) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for ; ; d *= 2 {
		f := newFake(t, "unix")
		box := newBox(t, f, opts...)
		b, err := json.Marshal(map[string]any{"command": command, "timeout_ms": d.Milliseconds()})
		if err != nil {
			t.Fatal(err)
		}
		r := invoke(context.Background(), t, box, string(b))
		rep, ok := r.Details.(Report)
		f.mu.Lock()
		early := f.earlyKills
		f.mu.Unlock()
		if ok && (lateKills || early == 0) {
			return f, r, rep, d
		}
		if time.Now().Add(2 * d).After(deadline) {
			t.Fatalf("the command never started within its timeout (the last %s): %q", d, r.Text())
		}
		t.Logf("the timeout of %s fired before the command started: trying again with %s", d, 2*d)
	}
}

func TestBashTimeout(t *testing.T) {
	f, r, rep, timeout := timedOut(t, "sleep", 150*time.Millisecond, false, WithKillGrace(100*time.Millisecond))
	if !r.IsError || r.ErrorCode != CodeCommandTimeout || !errors.Is(r.Err, ErrTimedOut) || r.Status != tool.StatusFailed {
		t.Fatalf("result %+v: %s", r, r.Text())
	}
	want := "started\nterminated\nTimed out after " + timeout.String() + ". The command and the processes it started that kept its environment were stopped."
	if r.Text() != want || rep.State != StateTimedOut || rep.ExitCode != 143 {
		t.Errorf("text %q, report %+v", r.Text(), rep)
	}
	tag := execTag(t, f, 0)
	if k := killRequests(f); !slices.Equal(k, []string{tag + " TERM"}) {
		t.Errorf("kill execs %q, want TERM for %s", k, tag)
	}
	src := killScript
	if !strings.Contains(src, markerVar+"=$1") || !strings.Contains(src, "/proc/[0-9]*") {
		t.Errorf("kill script: %s", src)
	}
}

func TestBashTimeoutKill(t *testing.T) {
	f, r, rep, _ := timedOut(t, "stubborn", 50*time.Millisecond, false, WithKillGrace(50*time.Millisecond))
	if r.ErrorCode != CodeCommandTimeout || rep.ExitCode != 137 || rep.Escaped {
		t.Fatalf("result %q %+v", r.Text(), rep)
	}
	tag := execTag(t, f, 0)
	if k := killRequests(f); !slices.Equal(k, []string{tag + " TERM", tag + " KILL"}) {
		t.Errorf("kill execs %q", k)
	}

	f2, r, _, _ := timedOut(t, "sleep", 50*time.Millisecond, false, WithKillGrace(0))
	if k := killRequests(f2); r.ErrorCode != CodeCommandTimeout || len(k) != 1 || !strings.HasSuffix(k[0], " KILL") {
		t.Errorf("grace 0: %q, kills %q", r.Text(), k)
	}
}

// TestBashDetachedOutputStillTimesOut checks that a command that closes its
// output and carries on is stopped at its timeout, not left running.
func TestBashDetachedOutputStillTimesOut(t *testing.T) {
	start := time.Now()
	f, r, rep, timeout := timedOut(t, "detach", 200*time.Millisecond, false, WithKillGrace(time.Minute))
	if r.ErrorCode != CodeCommandTimeout || rep.ExitCode != 143 || rep.Escaped {
		t.Fatalf("result %q %+v", r.Text(), rep)
	}
	if !strings.Contains(r.Text(), "detached") || !strings.Contains(r.Text(), "Timed out after "+timeout.String()) {
		t.Errorf("result %q", r.Text())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v: the command ended at SIGTERM, the grace period need not pass", d)
	}
	if k := killRequests(f); len(k) != 1 || !strings.HasSuffix(k[0], " TERM") {
		t.Errorf("kill execs %q, want one TERM", k)
	}
}

// TestBashKillResentToALateProcess checks that a command whose timeout
// passes before its process exists is still stopped: SIGKILL is sent again
// while its output has not ended.
func TestBashKillResentToALateProcess(t *testing.T) {
	f, r, rep, _ := timedOut(t, "slowstart", 20*time.Millisecond, true, WithKillGrace(0))
	if r.ErrorCode != CodeCommandTimeout || rep.ExitCode != 137 || rep.Escaped {
		t.Fatalf("result %q %+v", r.Text(), rep)
	}
	if k := killRequests(f); len(k) < 2 {
		t.Errorf("kill execs %q, want SIGKILL sent again", k)
	}
}

func TestBashEscapes(t *testing.T) {
	start := time.Now()
	_, r, rep, _ := timedOut(t, "immortal", 20*time.Millisecond, true, WithKillGrace(10*time.Millisecond))
	if r.ErrorCode != CodeCommandTimeout || !rep.Escaped || !strings.Contains(r.Text(), "may still be running in the sandbox") {
		t.Fatalf("result %q %+v", r.Text(), rep)
	}
	if d := time.Since(start); d > drainWait+20*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestBashCancelled(t *testing.T) {
	f := newFake(t, "tcp")
	box := newBox(t, f, WithKillGrace(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the command runs.
		for {
			f.mu.Lock()
			var running bool
			for _, e := range f.execs {
				select {
				case <-e.started:
					running = true
				default:
				}
			}
			f.mu.Unlock()
			if running {
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	r := invoke(ctx, t, box, `{"command":"sleep"}`)
	if r.Status != tool.StatusCancelled || !strings.Contains(r.Text(), "started\nterminated") {
		t.Fatalf("result %+v: %s", r, r.Text())
	}
	if k := killRequests(f); len(k) != 1 || !strings.HasSuffix(k[0], " TERM") {
		t.Errorf("kills %q", k)
	}
}

func TestDaemonVanishesMidExec(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	r := bashCall(t, box, "vanish")
	if !r.IsError || r.ErrorCode != tool.CodeToolError || !strings.Contains(r.Text(), "partial output") || !strings.Contains(r.Text(), f.host) {
		t.Fatalf("result %q", r.Text())
	}
	// The daemon is gone: the next call and Close fail, naming it.
	r = bashCall(t, box, "echo hi")
	if !r.IsError || !strings.Contains(r.Text(), f.host) {
		t.Errorf("next call: %q", r.Text())
	}
	if err := box.Close(); err == nil || !strings.Contains(err.Error(), f.host) {
		t.Errorf("Close: %v", err)
	}
}

func TestClose(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	done := make(chan tool.Result)
	go func() { done <- bashCall(t, box, "fill") }()
	// Close once the call has read the command's first line.
	select {
	case <-f.filled:
	case <-time.After(10 * time.Second):
		t.Fatal("the command's output was never read")
	}
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !r.IsError || !errors.Is(r.Err, ErrClosed) || !strings.Contains(r.Text(), "started\n") {
		t.Errorf("running call: %q %v", r.Text(), r.Err)
	}
	if _, err := box.Tools(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Tools after Close: %v", err)
	}
	r = bashCall2(t, box)
	if !r.IsError || !errors.Is(r.Err, ErrClosed) {
		t.Errorf("call after Close: %+v", r)
	}
}

// bashCall2 calls the tool kept from before Close.
func bashCall2(t *testing.T, box *Toolset) tool.Result {
	return tool.Invoke(context.Background(), box.tools[0], model.ToolCall{ID: "c", Name: BashName, Arguments: []byte(`{"command":"echo x"}`)})
}

func TestTimeoutLowered(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f, WithMaxTimeout(time.Second))
	r := invoke(context.Background(), t, box, `{"command":"echo hi","timeout_ms":5000}`)
	if r.IsError || !strings.HasSuffix(r.Text(), "(timeout_ms 5000 was lowered to the maximum, 1s.)") || r.Details.(Report).Timeout != time.Second {
		t.Errorf("result %q", r.Text())
	}
}

// The daemon reports a process it could not start inside the stream, as
// standard output, and records an exit code: the model sees both.
func TestBashStartFailureInStream(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	r := bashCall(t, box, "startfail")
	var ee *ExitError
	if !r.IsError || !errors.As(r.Err, &ee) || ee.Code != 127 || !strings.Contains(r.Text(), "executable file not found") || !strings.HasSuffix(r.Text(), "Exit code: 127") {
		t.Fatalf("result %q %v", r.Text(), r.Err)
	}
}

// TestNewCancelledDuringCreateRemovesTheContainer checks that a container
// the daemon created, whose answer New gave up on, is removed by its name
// rather than left running.
func TestNewCancelledDuringCreateRemovesTheContainer(t *testing.T) {
	f := newFake(t, "unix")
	f.mu.Lock()
	f.lateCreate = true
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	box, err := New(ctx, "alpine:3.20", WithHost(f.host))
	if err == nil {
		box.Close()
		t.Fatal("New succeeded without the daemon's answer")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.containers) != 0 {
		t.Errorf("containers left: %v", f.containers)
	}
}

// A daemon that never answers the request creating the exec must not hang
// the call past the command's timeout.
func TestExecCreateStallIsBounded(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	f.mu.Lock()
	f.stall["POST /containers/[^/]+/exec"] = true
	f.mu.Unlock()
	done := make(chan tool.Result, 1)
	go func() {
		done <- invoke(context.Background(), t, box, `{"command":"echo hi","timeout_ms":200}`)
	}()
	select {
	case r := <-done:
		if !r.IsError || r.ErrorCode != tool.CodeToolError || !strings.Contains(r.Text(), f.host) || !strings.Contains(r.Text(), "200ms") {
			t.Errorf("result %q %v", r.Text(), r.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call hangs while the daemon does not answer the exec's creation")
	}
}

// Close while the exit code is being read ends the call at once, with an
// error that wraps ErrClosed.
func TestCloseDuringInspect(t *testing.T) {
	f := newFake(t, "unix")
	box := newBox(t, f)
	f.mu.Lock()
	f.stall["GET /exec/[^/]+/json"] = true
	f.mu.Unlock()
	done := make(chan tool.Result, 1)
	go func() { done <- bashCall(t, box, "echo hi") }()
	for len(f.requests("GET /exec/")) == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := box.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !r.IsError || !errors.Is(r.Err, ErrClosed) || !strings.Contains(r.Text(), "hi\n") || !strings.Contains(r.Text(), "closed") {
		t.Errorf("result %q %v", r.Text(), r.Err)
	}
}

// DOCKER_HOST's unix:// address is the path that follows it, as the
// docker command reads it: a relative path is not cut at its first slash.
func TestUnixHostRelativePath(t *testing.T) {
	f := newFake(t, "unix")
	sock := strings.TrimPrefix(f.host, "unix://")
	t.Chdir(filepath.Dir(filepath.Dir(sock)))
	rel := filepath.Join(filepath.Base(filepath.Dir(sock)), filepath.Base(sock))
	box, err := New(context.Background(), "alpine:3.20", WithHost("unix://"+rel))
	if err != nil {
		t.Fatalf("unix://%s: %v", rel, err)
	}
	_ = box.Close()
	for _, host := range []string{"unix:/var/run/docker.sock", "unix:relative.sock"} {
		if _, err := New(context.Background(), "alpine", WithHost(host)); err == nil || !strings.Contains(err.Error(), "unix:///") {
			t.Errorf("host %q: err %v", host, err)
		}
	}
}

// TestTLSDaemonFromTheEnvironment reaches a daemon that speaks TLS the way
// the docker command does: DOCKER_HOST with DOCKER_TLS_VERIFY, checking
// the daemon's certificate against DOCKER_CERT_PATH's ca.pem. Without the
// CA, the daemon's certificate is refused.
func TestTLSDaemonFromTheEnvironment(t *testing.T) {
	f := newFake(t, "tls")
	certs := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(certs, "ca.pem"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", f.host)
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	t.Setenv("DOCKER_CERT_PATH", certs)
	box, err := New(context.Background(), "alpine:3.20")
	if err != nil {
		t.Fatalf("New over TLS: %v", err)
	}
	_ = box.Close()
	if len(f.requests("GET /_ping")) == 0 {
		t.Error("the daemon was not asked for its version")
	}

	t.Setenv("DOCKER_CERT_PATH", t.TempDir()) // no ca.pem: the system's roots
	_, err = New(context.Background(), "alpine:3.20")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("a daemon certificate no CA signed: got %v", err)
	}
}

// TestWithTLSSpeaksTLSToATCPDaemon gives the TLS configuration in code.
func TestWithTLSSpeaksTLSToATCPDaemon(t *testing.T) {
	f := newFake(t, "tls")
	pool := x509.NewCertPool()
	pool.AddCert(f.srv.Certificate())
	box, err := New(context.Background(), "alpine:3.20", WithHost(f.host), WithTLS(&tls.Config{RootCAs: pool}))
	if err != nil {
		t.Fatalf("New with WithTLS: %v", err)
	}
	_ = box.Close()
	if _, err := New(context.Background(), "alpine:3.20", WithTLS(nil)); err == nil || !strings.Contains(err.Error(), "WithTLS") {
		t.Errorf("WithTLS(nil): %v", err)
	}
}

// TestSSHHostRunsDialStdio reaches the daemon of an ssh:// address through
// the ssh command, which runs "docker system dial-stdio" on the host: here
// a stand-in ssh (this test binary) that joins its standard input and
// output to the fake daemon's socket.
func TestSSHHostRunsDialStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary as a stand-in ssh command; run without -short")
	}
	f := newFake(t, "unix")
	bin := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec \"" + exe + "\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	argsFile := filepath.Join(t.TempDir(), "args")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(fakeSSHSocket, strings.TrimPrefix(f.host, "unix://"))
	t.Setenv(fakeSSHArgs, argsFile)

	box, err := New(context.Background(), "alpine:3.20", WithHost("ssh://builder@build.example:2222"))
	if err != nil {
		t.Fatalf("New over ssh: %v", err)
	}
	r := bashCall(t, box, "echo hi")
	_ = box.Close()
	if r.IsError || !strings.Contains(r.Text(), "hi") {
		t.Errorf("bash over ssh: %q", r.Text())
	}
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "-o ConnectTimeout=30 -T -l builder -p 2222 -- build.example docker system dial-stdio"; string(args) != want {
		t.Errorf("ssh ran with %q, want %q", args, want)
	}
	for _, host := range []string{"ssh://", "ssh://-oProxyCommand=x", "ssh://h/path", "npipe:////./pipe/docker_engine"} {
		if _, err := New(context.Background(), "alpine", WithHost(host)); err == nil {
			t.Errorf("host %q accepted", host)
		}
	}
}
