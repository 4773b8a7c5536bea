package testserver

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// EnvBinary names the environment variable that gives the path of the
// server's binary, overriding the cache.
const EnvBinary = "TRELLIS_TEMPORAL_SERVER"

// ErrNoBinary reports that the server's binary has not been built.
var ErrNoBinary = errors.New("testserver: the Temporal test server is not built")

// Key returns the cache key of the server built from the sources in dir:
// the first 16 hex digits of the SHA-256 of its go.mod, its go.sum and its
// .go files (in byte order of their names), concatenated. .ci/devserver
// computes the same key.
func Key(dir string) (string, error) {
	gofiles, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", fmt.Errorf("testserver: key: %w", err)
	}
	slices.Sort(gofiles)
	h := sha256.New()
	for _, f := range append([]string{filepath.Join(dir, "go.mod"), filepath.Join(dir, "go.sum")}, gofiles...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("testserver: key: %w", err)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// CachePath returns where .ci/devserver puts the server built from the
// sources in dir: <user cache dir>/trellis/temporal-devserver/<key>/devserver.
func CachePath(dir string) (string, error) {
	key, err := Key(dir)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testserver: %w", err)
	}
	return filepath.Join(cache, "trellis", "temporal-devserver", key, "devserver"), nil
}

// Binary returns the path of the server's binary: $TRELLIS_TEMPORAL_SERVER
// if set, else the cache path of the sources in dir. It returns an error
// wrapping ErrNoBinary, naming the command that builds it, when there is
// no such file.
func Binary(dir string) (string, error) {
	path := os.Getenv(EnvBinary)
	if path == "" {
		var err error
		if path, err = CachePath(dir); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w at %s (build it with .ci/devserver, a few minutes the first time, or set %s): %w", ErrNoBinary, path, EnvBinary, err)
	}
	return path, nil
}

// Server is a running Temporal server.
type Server struct {
	// HostPort is the address of its frontend, on 127.0.0.1.
	HostPort string
	// Namespace is the namespace it registered at start.
	Namespace string

	cmd    *exec.Cmd
	stdin  *os.File // closing it stops the server
	stderr *os.File
}

// Start runs the server binary bin, with its standard error in the file
// logPath, and returns once it accepts connections, or with an error when
// it has not within the deadline of ctx.
func Start(ctx context.Context, bin, logPath string) (*Server, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("testserver: %w", err)
	}
	// Pipes of the process's own rather than exec's, which would copy
	// through goroutines: the server reads its standard input until it
	// is closed (Stop, or this process's end) and then stops.
	inR, inW, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("testserver: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		logf.Close()
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("testserver: %w", err)
	}
	cmd := exec.Command(bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logf
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		logf.Close()
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("testserver: start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, stdin: inW, stderr: logf}
	line, err := readLine(ctx, outR)
	outR.Close()
	if err == nil {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "ready" {
			err = fmt.Errorf("testserver: the server said %q, not ready <host:port> <namespace>", line)
		} else {
			s.HostPort, s.Namespace = f[1], f[2]
		}
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = s.Stop()
		return nil, fmt.Errorf("%w (its log: %s)", err, logPath)
	}
	return s, nil
}

// readLine reads one line from r, giving up when ctx ends (the caller then
// closes r, which ends the read).
func readLine(ctx context.Context, r *os.File) (string, error) {
	if d, ok := ctx.Deadline(); ok {
		// A pipe has deadlines: the read ends with them, and no goroutine
		// is left behind.
		if err := r.SetReadDeadline(d); err != nil {
			return "", fmt.Errorf("testserver: %w", err)
		}
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return "", fmt.Errorf("testserver: the server was not ready in time: %w", context.DeadlineExceeded)
		}
		if errors.Is(err, io.EOF) {
			return "", errors.New("testserver: the server exited before it was ready")
		}
		return "", fmt.Errorf("testserver: %w", err)
	}
	return strings.TrimSpace(line), nil
}

// Pid returns the server's process ID.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop stops the server and waits for it to exit; it kills it when it has
// not within 10 seconds.
func (s *Server) Stop() error {
	s.stdin.Close()
	kill := time.AfterFunc(10*time.Second, func() { _ = s.cmd.Process.Kill() })
	err := s.cmd.Wait()
	kill.Stop()
	s.stderr.Close()
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		return nil // killed
	}
	return err
}

// CPUTime returns the CPU time (user and system) the process pid has used,
// read from /proc (Linux).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("testserver: cpu time: %w", err)
	}
	// The command's name, in parentheses, may hold spaces: fields count
	// from the last ')'. utime and stime are fields 14 and 15 of the
	// line, the 12th and 13th after the name.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("testserver: cpu time: short /proc/%d/stat", pid)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("testserver: cpu time: %w", err)
		}
		ticks += n
	}
	// USER_HZ is 100 on every Linux Go supports.
	return time.Duration(ticks) * (time.Second / 100), nil
}
