package docker

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/internal/bgtask"
	"github.com/trellis-go/trellis/tool"
)

// The names of the tools a Toolset offers; they are tool/shell's.
const (
	// BashName is the name of the tool that runs a command in the
	// container, in the foreground or as a background task.
	BashName = "bash"
	// TaskOutputName is the name of the tool that reads a background
	// task's output.
	TaskOutputName = "task_output"
	// TaskStopName is the name of the tool that stops a background task.
	TaskStopName = "task_stop"
)

// DefaultName is the toolset's name unless WithName says otherwise.
const DefaultName = "docker"

// Defaults of the options.
const (
	// DefaultTimeout bounds a command whose call gives no timeout_ms.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxTimeout is the longest timeout a call's timeout_ms can ask
	// for.
	DefaultMaxTimeout = 10 * time.Minute
	// DefaultMaxOutput is how many bytes of output one result shows at
	// most; it is also how many unread bytes of a background task's output
	// are kept.
	DefaultMaxOutput = 30000
	// DefaultMaxTasks is how many background tasks may run at once.
	DefaultMaxTasks = 8
	// DefaultKillGrace is how long a command has to end after SIGTERM
	// before it is sent SIGKILL.
	DefaultKillGrace = 2 * time.Second
	// DefaultMemory is the container's memory limit, in bytes (1 GiB).
	DefaultMemory = 1 << 30
	// DefaultCPUs is how many CPUs' worth of time the container may use.
	DefaultCPUs = 1.0
	// DefaultPidsLimit is how many processes and threads the container
	// may have at once.
	DefaultPidsLimit = 512
	// DefaultNetwork is the container's network mode: no network but a
	// loopback interface.
	DefaultNetwork = "none"
)

// MaxFinishedTasks is how many finished background tasks whose final
// output has not been read are kept; beyond it the oldest are forgotten.
const MaxFinishedTasks = bgtask.MaxFinished

// keepAlive is the container's only process of its own: it idles until
// the container is removed. It ignores SIGTERM, SIGINT and SIGHUP, so that a
// command such as `killall sh` cannot end the container (and with it the
// toolset); Close removes the container by force, which kills it.
var keepAlive = []string{"sh", "-c", "trap '' TERM INT HUP; while :; do sleep 3600; done"}

// markerVar is the environment variable that tags every process a command
// starts, so that the command can be stopped: an exec has no endpoint to
// kill it, and its processes are found in the container by this tag.
const markerVar = "TRELLIS_DOCKER_RUN"

// removeTimeout bounds Close's removal of the container, and the removal
// of a container New could not start.
const removeTimeout = 30 * time.Second

// Error codes of the results (tool.Result.ErrorCode) of commands that ran
// and failed; they are tool/shell's. Other failures have
// tool.CodeToolError.
const (
	// CodeNonZeroExit: the command exited with a code other than 0. Err
	// is an *ExitError.
	CodeNonZeroExit = "nonzero_exit"
	// CodeCommandTimeout: the command ran past its timeout and was
	// stopped. Err is ErrTimedOut.
	CodeCommandTimeout = "command_timeout"
)

var (
	// ErrClosed is the error of the calls made after Close, and of the
	// commands that Close ended.
	ErrClosed = errors.New("docker: the toolset is closed")
	// ErrTimedOut is the error of a command that ran past its timeout.
	ErrTimedOut = errors.New("docker: the command timed out")
	// ErrImageNotFound is the error of New when the daemon does not have
	// the image and WithPull was not given.
	ErrImageNotFound = errors.New("docker: image not found")
	// ErrTooManyTasks is the error of a background start refused because
	// WithMaxTasks tasks are running.
	ErrTooManyTasks = errors.New("docker: too many background tasks")
	// ErrUnknownTask is the error of a task_output or task_stop call whose
	// task ID names no task the toolset keeps.
	ErrUnknownTask = errors.New("docker: unknown task")
	// ErrContainerGone is the error of a call whose container is no longer
	// running: it was stopped or removed from outside, or it ran out of
	// memory. No command can run in the toolset any more.
	ErrContainerGone = errors.New("docker: the container is not running")
)

// ExitError is the error of a command that exited with a code other
// than 0.
type ExitError struct {
	// Code is the exit code.
	Code int
}

// Error returns the error's message.
func (e *ExitError) Error() string {
	return fmt.Sprintf("docker: the command exited with code %d", e.Code)
}

// Option configures a Toolset.
type Option func(*config)

type config struct {
	bgtask.Limits
	name     string
	host     string
	tls      *tls.Config // for a tcp:// daemon; nil for plain HTTP
	pull     bool
	shell    []string
	memory   int64
	nanoCPUs int64
	pids     int64
	network  string
	readOnly bool
	workdir  string
	mounts   []mount
	tmpfs    map[string]string
	env      []string
	user     string
	problems []string
}

func (c *config) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// WithName names the toolset (DefaultName unless set); the name goes into
// errors, logs, and the container's name and labels.
func WithName(name string) Option {
	return func(c *config) {
		if strings.TrimSpace(name) == "" {
			c.problem("WithName: the name is empty")
		}
		c.name = name
	}
}

// WithHost sets the daemon's address: unix:///path/to/docker.sock,
// tcp://host:port (plain HTTP, or TLS with WithTLS) or
// ssh://[user@]host[:port] (the ssh command runs "docker system
// dial-stdio" on the host, as the docker command does; its configuration
// and keys are the ssh command's). Named pipes (npipe://, Docker on
// Windows) are not supported. Without WithHost the environment variable
// DOCKER_HOST is used, with TLS when DOCKER_TLS_VERIFY is set (the
// certificates of DOCKER_CERT_PATH, default ~/.docker: ca.pem, cert.pem,
// key.pem), and without DOCKER_HOST DefaultHost.
func WithHost(host string) Option {
	return func(c *config) {
		if strings.TrimSpace(host) == "" {
			c.problem("WithHost: the address is empty")
		}
		c.host = host
	}
}

// WithTLS speaks TLS with cfg to a tcp:// daemon (WithHost or
// DOCKER_HOST), whose port is then 2376 unless the address names one. cfg
// holds the CA that signed the daemon's certificate (RootCAs) and the
// client's certificate (Certificates); its ServerName defaults to the
// address's host. Without it, DOCKER_TLS_VERIFY decides, as WithHost says.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			c.problem("WithTLS: the configuration is nil")
		}
		c.tls = cfg
	}
}

// WithPull makes New pull the image when the daemon does not have it,
// instead of failing with ErrImageNotFound. The pull needs the daemon to
// reach the registry, and is bounded by New's context.
func WithPull() Option { return func(c *config) { c.pull = true } }

// WithShell runs the commands with the program at path in the container,
// given args and then the command: WithShell("bash", "-o", "pipefail",
// "-c"). Without args, "-c" is used. The default is sh -c.
func WithShell(path string, args ...string) Option {
	return func(c *config) {
		if strings.TrimSpace(path) == "" {
			c.problem("WithShell: the shell's path is empty")
		}
		if len(args) == 0 {
			args = []string{"-c"}
		}
		c.shell = append([]string{path}, args...)
	}
}

// WithTimeout bounds the commands whose call gives no timeout_ms
// (DefaultTimeout unless set); d must be positive. It is capped at the
// maximum (WithMaxTimeout).
func WithTimeout(d time.Duration) Option { return func(c *config) { c.SetTimeout(d, c.problem) } }

// WithMaxTimeout sets the longest timeout a call's timeout_ms can ask for
// (DefaultMaxTimeout unless set); d must be positive. A longer timeout_ms
// is lowered to it, and the result says so. It also bounds how long
// task_output waits for a task to finish.
func WithMaxTimeout(d time.Duration) Option { return func(c *config) { c.SetMaxTimeout(d, c.problem) } }

// WithMaxOutput caps, in bytes, the output one result shows
// (DefaultMaxOutput unless set); n must be at least 1. A foreground
// command's longer output is cut in the middle: the result shows its
// first n/2 bytes and its last bytes, and how many were left out between.
// A background task keeps the last n bytes of its unread output, and a
// read says how many were dropped before them.
func WithMaxOutput(n int) Option { return func(c *config) { c.SetMaxOutput(n, c.problem) } }

// WithMaxTasks bounds how many background tasks may run at once
// (DefaultMaxTasks unless set); n must be at least 1. A start beyond it is
// an error result that says so and lists the running tasks. Finished
// tasks do not count.
func WithMaxTasks(n int) Option { return func(c *config) { c.SetMaxTasks(n, c.problem) } }

// WithKillGrace sets how long a command being stopped (timed out,
// cancelled, or stopped with task_stop) has to end after its processes are sent SIGTERM, before they
// are sent SIGKILL (DefaultKillGrace unless set); d must not be negative,
// and 0 sends SIGKILL at once.
func WithKillGrace(d time.Duration) Option { return func(c *config) { c.SetKillGrace(d, c.problem) } }

// WithMemory limits the container's memory to n bytes (DefaultMemory
// unless set), swap included: the container gets no swap. n must be at
// least 6 MiB, the least the daemon accepts. A command that needs more is
// killed by the kernel, and its result shows exit code 137.
func WithMemory(n int64) Option {
	return func(c *config) {
		if n < 6<<20 {
			c.problem("WithMemory: the limit must be at least 6 MiB (6291456 bytes), not %d", n)
		}
		c.memory = n
	}
}

// WithCPUs limits the container to n CPUs' worth of time (DefaultCPUs
// unless set), such as 0.5 or 2; n must be at least 0.01, and the daemon
// refuses, in New, more than the number of CPUs its host has.
func WithCPUs(n float64) Option {
	return func(c *config) {
		if !(n >= 0.01) || math.IsInf(n, 0) || n > 1e6 {
			c.problem("WithCPUs: the number of CPUs must be between 0.01 and 1e6, not %v", n)
			return
		}
		c.nanoCPUs = int64(math.Round(n * 1e9))
	}
}

// WithPidsLimit limits the container to n processes and threads at once
// (DefaultPidsLimit unless set), which stops a fork bomb; n must be at
// least 8 (the container's own and the commands' shells need some).
func WithPidsLimit(n int64) Option {
	return func(c *config) {
		if n < 8 {
			c.problem("WithPidsLimit: the limit must be at least 8, not %d", n)
		}
		c.pids = n
	}
}

// WithNetwork sets the container's network mode (DefaultNetwork, "none",
// unless set): "bridge" for the default network with access to the
// outside, the name of a user-defined network, or "host" (no isolation:
// avoid). With any mode but "none", bash is marked OpenWorld.
func WithNetwork(mode string) Option {
	return func(c *config) {
		if strings.TrimSpace(mode) == "" {
			c.problem("WithNetwork: the network mode is empty")
		}
		c.network = mode
	}
}

// WithReadOnlyRoot makes the container's root file system read-only:
// commands can write only to mounts (WithMount, WithTmpfs). Without it
// they can change the container's files, which Close discards.
func WithReadOnlyRoot() Option { return func(c *config) { c.readOnly = true } }

// WithWorkdir sets the directory every command starts in, an absolute path
// in the container; the daemon creates it if it is missing. Without it the
// image's working directory is used, or "/".
func WithWorkdir(dir string) Option {
	return func(c *config) {
		if !path.IsAbs(dir) {
			c.problem("WithWorkdir: %q is not an absolute path", dir)
		}
		c.workdir = dir
	}
}

// WithMount bind-mounts the host's directory (or file) hostPath at
// containerPath in the container, read-only when readOnly is set. hostPath
// must exist on the daemon's host; both paths must be absolute. A
// writable mount is the way a command's work outlives the container, and
// the way it can change the host's files: the commands can change or
// delete anything under hostPath.
func WithMount(hostPath, containerPath string, readOnly bool) Option {
	return func(c *config) {
		if !isAbsHostPath(hostPath) {
			c.problem("WithMount: the host path %q is not absolute", hostPath)
		}
		if !path.IsAbs(containerPath) || path.Clean(containerPath) == "/" {
			c.problem("WithMount: the container path %q is not an absolute path below /", containerPath)
		}
		c.mounts = append(c.mounts, mount{Type: "bind", Source: hostPath, Target: path.Clean(containerPath), ReadOnly: readOnly})
	}
}

// isAbsHostPath reports whether p is absolute on a unix host or a Windows
// one (the daemon's host may not be this one).
func isAbsHostPath(p string) bool {
	if strings.HasPrefix(p, "/") {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// WithTmpfs mounts an empty in-memory file system of at most size bytes
// at containerPath, writable, discarded with the container; with
// WithReadOnlyRoot it gives the commands a scratch directory such as
// /tmp. Its memory counts against the container's limit.
func WithTmpfs(containerPath string, size int64) Option {
	return func(c *config) {
		if !path.IsAbs(containerPath) || path.Clean(containerPath) == "/" {
			c.problem("WithTmpfs: the container path %q is not an absolute path below /", containerPath)
		}
		if size < 1 {
			c.problem("WithTmpfs: the size must be positive, not %d", size)
		}
		if c.tmpfs == nil {
			c.tmpfs = map[string]string{}
		}
		c.tmpfs[path.Clean(containerPath)] = fmt.Sprintf("rw,nosuid,nodev,size=%d", size)
	}
}

// WithEnv adds variables to the container's environment, or overrides the
// image's, as "KEY=value" strings. The process's own environment is never
// passed on.
func WithEnv(kv ...string) Option {
	return func(c *config) {
		for _, e := range kv {
			k, _, ok := strings.Cut(e, "=")
			if !ok || k == "" || strings.ContainsRune(e, 0) {
				c.problem("WithEnv: %q is not of the form KEY=value", e)
				continue
			}
			c.env = append(c.env, e)
		}
	}
}

// WithUser runs the container's processes, the commands included, as user
// ("name", "uid" or "uid:gid"), which must exist in the image when it is a
// name. Without it the image's user is used, often root (root without
// capabilities: see the package documentation).
func WithUser(user string) Option {
	return func(c *config) {
		if strings.TrimSpace(user) == "" {
			c.problem("WithUser: the user is empty")
		}
		c.user = user
	}
}

// Toolset lets a model run shell commands in one Docker container,
// created by New and removed by Close, in the foreground or as background
// tasks. It implements tool.Toolset; its tools are safe for concurrent use.
type Toolset struct {
	cfg       config
	c         *client
	image     string
	container string
	workdir   string
	warnings  []string
	tools     []tool.Tool

	// base is cancelled, with ErrClosed as its cause, by Close.
	base   context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	closed bool
	runs   sync.WaitGroup // foreground commands running, and kills sent without a call
	tasks  *bgtask.Manager[Report]
	once   sync.Once
	err    error // of Close's removal
}

var _ tool.Toolset = (*Toolset)(nil)

// New connects to the Docker daemon, checks that it has image (or pulls
// it, with WithPull), and creates and starts the container the commands
// will run in, with the limits of the options. ctx bounds all of it; a
// container created when New fails is removed.
//
// The container runs a keep-alive shell in place of the image's
// entrypoint and command, so the image needs sh (and grep and kill, to
// stop commands at their timeout; busybox has all three). Misconfigured
// options are an error wrapping tool.ErrInvalidTool that names them; a
// daemon that does not answer, and the daemon's refusals, are errors that
// name its address.
func New(ctx context.Context, image string, opts ...Option) (*Toolset, error) {
	c := config{
		name:  DefaultName,
		shell: []string{"sh", "-c"},
		Limits: bgtask.Limits{
			Timeout:    DefaultTimeout,
			MaxTimeout: DefaultMaxTimeout,
			MaxOutput:  DefaultMaxOutput,
			MaxTasks:   DefaultMaxTasks,
			KillGrace:  DefaultKillGrace,
		},
		memory:   DefaultMemory,
		nanoCPUs: int64(DefaultCPUs * 1e9),
		pids:     DefaultPidsLimit,
		network:  DefaultNetwork,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if strings.TrimSpace(image) == "" {
		c.problem("the image is empty; name one, such as alpine:3.20")
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: docker %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	c.Timeout = min(c.Timeout, c.MaxTimeout)
	if c.host == "" {
		c.host = cmpOr(os.Getenv("DOCKER_HOST"), DefaultHost)
		if os.Getenv("DOCKER_TLS_VERIFY") != "" && strings.HasPrefix(c.host, "tcp://") && c.tls == nil {
			// The docker command speaks TLS to this daemon, with the
			// certificates of DOCKER_CERT_PATH.
			cfg, err := tlsFromEnv()
			if err != nil {
				return nil, err
			}
			c.tls = cfg
		}
	}
	cl, err := newClient(c.host, c.tls)
	if err != nil {
		return nil, err
	}
	s, err := start(ctx, cl, image, c)
	if err != nil {
		cl.close()
		return nil, err
	}
	return s, nil
}

// start does New's work with the daemon.
func start(ctx context.Context, cl *client, image string, c config) (*Toolset, error) {
	if err := cl.negotiate(ctx); err != nil {
		return nil, err
	}
	info, err := cl.inspectImage(ctx, image)
	if isStatus(err, 404) && c.pull {
		if err = cl.pullImage(ctx, image); err != nil {
			return nil, err
		}
		info, err = cl.inspectImage(ctx, image)
	}
	switch {
	case isStatus(err, 404):
		return nil, fmt.Errorf("%w: the daemon at %s does not have the image %q: run docker pull %s, or give New the option WithPull",
			ErrImageNotFound, cl.host, image, image)
	case err != nil:
		return nil, err
	}
	workdir := cmpOr(c.workdir, cmpOr(info.Config.WorkingDir, "/"))

	pids := c.pids
	cfg := containerConfig{
		Image:      image,
		Entrypoint: keepAlive[:1],
		Cmd:        keepAlive[1:],
		WorkingDir: c.workdir,
		Env:        c.env,
		User:       c.user,
		Labels:     map[string]string{"org.trellis-go.toolset": c.name},
		HostConfig: hostConfig{
			Memory:         c.memory,
			MemorySwap:     c.memory, // the same as Memory: no swap
			NanoCPUs:       c.nanoCPUs,
			PidsLimit:      &pids,
			NetworkMode:    c.network,
			ReadonlyRootfs: c.readOnly,
			Mounts:         c.mounts,
			Tmpfs:          c.tmpfs,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Init:           true,
			AutoRemove:     true,
		},
	}
	name := "trellis-" + containerNamePart(c.name) + "-" + strings.ToLower(rand.Text()[:10])
	id, warnings, err := cl.createContainer(ctx, name, cfg)
	if err != nil {
		if ctx.Err() != nil {
			// The daemon may have created the container before its answer
			// was given up on: remove it by its name.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
			_ = cl.removeContainer(rctx, name)
			cancel()
		}
		return nil, err
	}
	if err := cl.startContainer(ctx, id); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		_ = cl.removeContainer(rctx, id)
		return nil, err
	}
	base, cancel := context.WithCancelCause(context.Background())
	s := &Toolset{
		cfg:       c,
		c:         cl,
		image:     image,
		container: id,
		workdir:   workdir,
		warnings:  warnings,
		base:      base,
		cancel:    cancel,
	}
	s.tasks = s.newTasks()
	for _, mk := range []func() (tool.Tool, error){s.bashTool, s.tasks.OutputTool, s.tasks.StopTool} {
		t, err := mk()
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("docker %q: %w", c.name, err)
		}
		s.tools = append(s.tools, t)
	}
	return s, nil
}

// containerNamePart makes name fit a container's name, whose characters
// are [a-zA-Z0-9_.-].
func containerNamePart(name string) string {
	b := []byte(name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.' || ch == '-') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 40)])
}

// Name returns the toolset's name.
func (s *Toolset) Name() string { return s.cfg.name }

// ContainerID returns the ID of the container the commands run in.
func (s *Toolset) ContainerID() string { return s.container }

// Image returns the image the container was created from, as New got it.
func (s *Toolset) Image() string { return s.image }

// Workdir returns the directory in the container that every command
// starts in.
func (s *Toolset) Workdir() string { return s.workdir }

// Host returns the address of the daemon, as given or found.
func (s *Toolset) Host() string { return s.c.host }

// APIVersion returns the Engine API version spoken with the daemon.
func (s *Toolset) APIVersion() string { return s.c.version }

// Warnings returns the daemon's warnings about the container's
// configuration, such as a limit the kernel cannot enforce.
func (s *Toolset) Warnings() []string { return slices.Clone(s.warnings) }

// Tools returns the toolset's tools; after Close it returns an error.
func (s *Toolset) Tools(context.Context) ([]tool.Tool, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("docker %q: %w", s.cfg.name, ErrClosed)
	}
	return slices.Clone(s.tools), nil
}

// Close ends the commands still running, foreground and background,
// waits for their calls and tasks to return, and kills and removes the container with everything written to it but
// to writable mounts. It returns the daemon's error when the removal
// failed, which leaves the container running (it is named
// trellis-NAME-... and labelled org.trellis-go.toolset=NAME). Calls made
// after Close are error results; calling Close again returns the first
// call's error.
func (s *Toolset) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.tasks.Close()
		s.cancel(ErrClosed)
		s.runs.Wait()
		s.tasks.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
		defer cancel()
		if err := s.c.removeContainer(ctx, s.container); err != nil {
			s.err = fmt.Errorf("docker %q: removing container %s: %w", s.cfg.name, shortID(s.container), err)
		}
		s.c.close()
	})
	return s.err
}

// Tasks returns a report on each background task the toolset keeps:
// those running and those finished whose final output has not been read,
// in the order they were started. It is meant for user interfaces; the
// model uses task_output.
func (s *Toolset) Tasks() []Report { return s.tasks.Tasks() }

// shortID returns the first 12 characters of an ID, as docker shows it.
func shortID(id string) string { return id[:min(len(id), 12)] }

// enter registers a command about to start; it reports false after Close.
func (s *Toolset) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.runs.Add(1)
	return true
}

// timeoutFor returns the timeout of a command whose call asked for ms
// milliseconds (0: none asked), and whether the ask was lowered to the
// maximum.
func (s *Toolset) timeoutFor(ms int) (time.Duration, bool) {
	return bgtask.TimeoutFor(ms, s.cfg.Timeout, s.cfg.MaxTimeout)
}
