package docker

import (
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(fakeSSHSocket); sock != "" {
		fakeSSH(sock)
		return
	}
	goleak.VerifyTestMain(m)
}

// fakeSSHSocket names the environment variable that makes the test binary
// act as the ssh command of TestSSHHostRunsDialStdio: it records its
// arguments in the file fakeSSHArgs names and joins its standard input
// and output to the daemon's socket, as "docker system dial-stdio" does.
const (
	fakeSSHSocket = "TRELLIS_FAKE_SSH_SOCKET"
	fakeSSHArgs   = "TRELLIS_FAKE_SSH_ARGS"
)

func fakeSSH(sock string) {
	_ = os.WriteFile(os.Getenv(fakeSSHArgs), []byte(strings.Join(os.Args[1:], " ")), 0o600)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		os.Stderr.WriteString("dial-stdio: " + err.Error() + "\n")
		os.Exit(1)
	}
	go func() {
		_, _ = io.Copy(conn, os.Stdin)
		_ = conn.(*net.UnixConn).CloseWrite()
	}()
	_, _ = io.Copy(os.Stdout, conn)
	os.Exit(0)
}
