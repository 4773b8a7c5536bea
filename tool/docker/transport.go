package docker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The transports of the Engine API client: a unix socket, TCP in plain
// HTTP or in TLS, and ssh://, which runs "docker system dial-stdio" on the
// remote host through the ssh command, as the docker command does. Named
// pipes (npipe://) are the Windows daemon's transport and are not
// supported: the package runs its sandboxes on Linux hosts.
//
// They are written here rather than taken from the Docker client library
// (github.com/moby/moby/client): that library brings in several dozen
// modules (the Engine API types, go-connections, OpenTelemetry HTTP
// instrumentation, the distribution reference parser...) for the dozen
// requests this package sends, while each transport is a dialer of the
// standard library: net.Dialer, tls.Dialer, and os/exec for ssh.

// tlsFromEnv returns the TLS configuration the docker command would use
// for a tcp:// DOCKER_HOST when DOCKER_TLS_VERIFY is set: the daemon's
// certificate checked against ca.pem, and cert.pem with key.pem presented
// to it, from DOCKER_CERT_PATH (default ~/.docker). A file that does not
// exist is left out, as the docker command does; one that does not load
// is an error.
func tlsFromEnv() (*tls.Config, error) {
	dir := os.Getenv("DOCKER_CERT_PATH")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("docker: DOCKER_TLS_VERIFY is set, DOCKER_CERT_PATH is not, and there is no home directory: %w", err)
		}
		dir = filepath.Join(home, ".docker")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	switch {
	case err == nil:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("docker: %s holds no PEM certificate", filepath.Join(dir, "ca.pem"))
		}
		cfg.RootCAs = pool
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("docker: the daemon's CA: %w", err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if _, err := os.Stat(certFile); err == nil {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("docker: the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// sshTarget parses ssh://[user@]host[:port] into the ssh command's
// arguments before the remote command.
func sshTarget(host string, u *url.URL) ([]string, error) {
	if u.Hostname() == "" || u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return nil, fmt.Errorf("docker: the daemon's address %q is not of the form ssh://[user@]host[:port]", host)
	}
	if strings.HasPrefix(u.Hostname(), "-") {
		return nil, fmt.Errorf("docker: the daemon's address %q names a host that starts with '-'", host)
	}
	args := []string{"-o", "ConnectTimeout=30", "-T"}
	if user := u.User.Username(); user != "" {
		args = append(args, "-l", user)
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	return append(args, "--", u.Hostname(), "docker", "system", "dial-stdio"), nil
}

// sshDial starts "ssh args..." and returns its standard input and output
// as a connection to the remote daemon. Closing the connection ends the
// process.
func sshDial(ctx context.Context, args []string) (net.Conn, error) {
	cmd := exec.Command("ssh", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &cmdConn{cmd: cmd, r: stdout, w: stdin}
	cmd.Stderr = &c.stderr
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("docker: running ssh: %w", err)
	}
	return c, nil
}

// cmdConn is a connection over a process's standard input and output.
// Deadlines are not supported: the HTTP client bounds requests with their
// contexts, which close the connection.
type cmdConn struct {
	cmd    *exec.Cmd
	r      io.ReadCloser
	w      io.WriteCloser
	stderr limitedBuffer
	once   sync.Once
}

func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		if msg := strings.TrimSpace(c.stderr.String()); msg != "" {
			return n, fmt.Errorf("docker: ssh: %s: %w", msg, io.ErrUnexpectedEOF)
		}
	}
	return n, err
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close ends the process and waits for it.
func (c *cmdConn) Close() error {
	c.once.Do(func() {
		_ = c.w.Close()
		if c.cmd.Process != nil {
			_ = c.cmd.Process.Kill()
		}
		_ = c.cmd.Wait()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr              { return cmdAddr{} }
func (c *cmdConn) RemoteAddr() net.Addr             { return cmdAddr{} }
func (c *cmdConn) SetDeadline(time.Time) error      { return nil }
func (c *cmdConn) SetReadDeadline(time.Time) error  { return nil }
func (c *cmdConn) SetWriteDeadline(time.Time) error { return nil }

// cmdAddr is the address of both ends of a cmdConn.
type cmdAddr struct{}

func (cmdAddr) Network() string { return "ssh" }
func (cmdAddr) String() string  { return "ssh" }

// limitedBuffer keeps the first 4 KiB written to it, for the message of
// a connection that failed.
type limitedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 4<<10 - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
