package docker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeDaemon speaks the Engine API as documented, over a unix socket or
// 127.0.0.1, and runs "commands" from a small repertoire (see run).
type fakeDaemon struct {
	srv     *httptest.Server
	host    string
	dir     string // of the unix socket
	version string // the Api-Version header of /_ping; "" for none

	mu         sync.Mutex
	reqs       []fakeReq
	images     map[string]bool
	containers map[string]bool // by ID: running
	execs      map[string]*fakeExec
	seq        int
	conns      map[net.Conn]bool
	closing    chan struct{}
	closeOnce  sync.Once
	// fail answers the requests whose unversioned "METHOD /path" matches
	// a key, a regular expression, with the status and message.
	fail map[string]fakeFailure
	// stall leaves the requests whose unversioned "METHOD /path" matches a
	// key unanswered until the client gives up or the fake closes: a
	// daemon that stops answering.
	stall map[string]bool
	// pull is the body of POST /images/create.
	pull string
	// names maps the names of containers to their IDs.
	names map[string]string
	// lateCreate makes POST /containers/create create the container and
	// then answer only once the client has given up: an answer lost.
	lateCreate bool
	// gate holds the command "gate" until it is closed.
	gate chan struct{}
	// filled is closed once the command "fill" has written its filler:
	// by then the client has read the output before it.
	filled     chan struct{}
	filledOnce sync.Once
	// earlyKills counts the kill execs that came before any program with
	// their tag had started.
	earlyKills int
}

// fillSize is the size of the filler the command "fill" writes after its
// first line: far more than the socket buffers between the fake and the
// client hold, so that its write ends only once the client has read the
// first line.
const fillSize = 8 << 20

type fakeFailure struct {
	status int
	msg    string
}

// fakeReq is a request the fake received.
type fakeReq struct {
	Method string
	Path   string // as sent, version prefix included
	Query  url.Values
	Body   []byte
}

// route is the request's unversioned "METHOD /path".
func (r fakeReq) route() string {
	return r.Method + " " + versionPrefix.ReplaceAllString(r.Path, "")
}

var versionPrefix = regexp.MustCompile(`^/v1\.\d+`)

type fakeExec struct {
	id      string
	cfg     execConfig
	tag     string
	running bool
	exit    *int
	inspect int           // inspections so far
	sig     chan string   // signals delivered by kill execs
	started chan struct{} // closed when its program runs
}

// newFake starts a fake daemon listening on network: "unix" (a socket in
// a temporary directory) or "tcp" (127.0.0.1). It stops with the test.
func newFake(t testing.TB, network string) *fakeDaemon {
	t.Helper()
	f, err := startFake(network)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

// startFake starts a fake daemon; close stops it.
func startFake(network string) (*fakeDaemon, error) {
	f := &fakeDaemon{
		version:    "1.47",
		images:     map[string]bool{"alpine:3.20": true},
		containers: map[string]bool{},
		execs:      map[string]*fakeExec{},
		conns:      map[net.Conn]bool{},
		closing:    make(chan struct{}),
		fail:       map[string]fakeFailure{},
		stall:      map[string]bool{},
		gate:       make(chan struct{}),
		filled:     make(chan struct{}),
	}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	switch network {
	case "unix":
		// A short directory: socket paths are limited to about 100 bytes.
		dir, err := os.MkdirTemp("", "dk")
		if err != nil {
			return nil, err
		}
		f.dir = dir
		sock := filepath.Join(dir, "docker.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		f.srv.Listener.Close()
		f.srv.Listener = l
		f.host = "unix://" + sock
	case "tcp", "tls":
		f.host = "tcp://" + f.srv.Listener.Addr().String()
	default:
		return nil, fmt.Errorf("network %q", network)
	}
	if network == "tls" {
		f.srv.StartTLS()
		return f, nil
	}
	f.srv.Start()
	return f, nil
}

// close stops the programs running, drops the connections and stops the
// server.
func (f *fakeDaemon) close() {
	f.closeOnce.Do(func() {
		close(f.closing)
		f.mu.Lock()
		for c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.srv.Close()
		if f.dir != "" {
			os.RemoveAll(f.dir)
		}
	})
}

// requests returns the requests received, those matching route (unversioned
// "METHOD /path" prefix) when route is not "".
func (f *fakeDaemon) requests(route string) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if route == "" || strings.HasPrefix(r.route(), route) {
			out = append(out, r)
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

func (f *fakeDaemon) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := fakeReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	var fail fakeFailure
	failing := false
	for pattern, v := range f.fail {
		if regexp.MustCompile("^" + pattern + "$").MatchString(req.route()) {
			fail, failing = v, true
		}
	}
	stalling := false
	for pattern := range f.stall {
		if regexp.MustCompile("^" + pattern + "$").MatchString(req.route()) {
			stalling = true
		}
	}
	f.mu.Unlock()
	if stalling {
		select {
		case <-r.Context().Done():
		case <-f.closing:
		}
		return
	}
	w.Header().Set("Api-Version", f.version)

	if r.URL.Path == "/_ping" && r.Method == http.MethodGet {
		if f.version == "" {
			w.Header().Del("Api-Version")
		}
		fmt.Fprint(w, "OK")
		return
	}
	v := versionPrefix.FindString(r.URL.Path)
	if v == "" {
		writeError(w, http.StatusBadRequest, "the fake wants versioned paths, not "+r.URL.Path)
		return
	}
	if v != "/v"+f.version && !(f.version != "" && versionLess(strings.TrimPrefix(v, "/v"), f.version)) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("client version %s is too new. Maximum supported API version is %s", v[2:], f.version))
		return
	}
	if failing {
		writeError(w, fail.status, fail.msg)
		return
	}
	// The daemon refuses a body that is not declared JSON.
	if len(body) > 0 && r.Header.Get("Content-Type") != "application/json" {
		writeError(w, http.StatusBadRequest, "unsupported Content-Type header ("+r.Header.Get("Content-Type")+"): must be 'application/json'")
		return
	}
	p := strings.TrimPrefix(r.URL.Path, v)
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json")
		f.mu.Lock()
		ok := f.images[name] || !hasTagOrDigest(name) && f.images[name+":latest"]
		f.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "No such image: "+name)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"Id": "sha256:abc", "Config": map[string]any{"WorkingDir": "/home"}})
	case r.Method == http.MethodPost && p == "/images/create":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, f.pull)
		if !strings.Contains(f.pull, "error") {
			f.mu.Lock()
			f.images[req.Query.Get("fromImage")+":"+req.Query.Get("tag")] = true
			f.mu.Unlock()
		}
	case r.Method == http.MethodPost && p == "/containers/create":
		var cfg containerConfig
		if err := json.Unmarshal(body, &cfg); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		f.mu.Lock()
		f.seq++
		id := fmt.Sprintf("c%063d", f.seq)
		f.containers[id] = false
		if f.names == nil {
			f.names = map[string]string{}
		}
		f.names[req.Query.Get("name")] = id
		late := f.lateCreate
		f.mu.Unlock()
		if late {
			select {
			case <-r.Context().Done():
			case <-f.closing:
			}
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"Id": id, "Warnings": []string{}})
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/start"):
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/containers/"), "/start")
		f.mu.Lock()
		_, ok := f.containers[id]
		if ok {
			f.containers[id] = true
		}
		f.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "No such container: "+id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete && strings.HasPrefix(p, "/containers/"):
		id := strings.TrimPrefix(p, "/containers/")
		f.mu.Lock()
		if byName, ok := f.names[id]; ok {
			id = byName
		}
		_, ok := f.containers[id]
		delete(f.containers, id)
		f.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "No such container: "+id)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/exec"):
		id := strings.TrimSuffix(strings.TrimPrefix(p, "/containers/"), "/exec")
		var cfg execConfig
		if err := json.Unmarshal(body, &cfg); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		f.mu.Lock()
		running, ok := f.containers[id]
		if !ok || !running {
			f.mu.Unlock()
			writeError(w, http.StatusConflict, "container "+id+" is not running")
			return
		}
		f.seq++
		e := &fakeExec{id: fmt.Sprintf("e%063d", f.seq), cfg: cfg, sig: make(chan string, 4), started: make(chan struct{})}
		for _, kv := range cfg.Env {
			if t, ok := strings.CutPrefix(kv, markerVar+"="); ok {
				e.tag = t
			}
		}
		f.execs[e.id] = e
		f.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]string{"Id": e.id})
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/exec/") && strings.HasSuffix(p, "/start"):
		f.mu.Lock()
		e := f.execs[strings.TrimSuffix(strings.TrimPrefix(p, "/exec/"), "/start")]
		if e != nil {
			e.running = true
		}
		f.mu.Unlock()
		if e == nil {
			writeError(w, http.StatusNotFound, "No such exec instance")
			return
		}
		f.runExec(w, e)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/exec/") && strings.HasSuffix(p, "/json"):
		f.mu.Lock()
		defer f.mu.Unlock()
		e := f.execs[strings.TrimSuffix(strings.TrimPrefix(p, "/exec/"), "/json")]
		if e == nil {
			writeError(w, http.StatusNotFound, "No such exec instance")
			return
		}
		e.inspect++
		running, exit := e.running, e.exit
		if len(e.cfg.Cmd) > 2 && e.cfg.Cmd[2] == "linger" && e.inspect < 3 {
			running, exit = true, nil
		}
		writeJSON(w, http.StatusOK, map[string]any{"ID": e.id, "Running": running, "ExitCode": exit, "Pid": 4242})
	default:
		writeError(w, http.StatusNotFound, "page not found: "+r.Method+" "+p)
	}
}

// frames writes a multiplexed stream to a hijacked connection.
type frames struct{ w io.Writer }

func (fr frames) frame(stream byte, s string) { _ = fr.frameErr(stream, s) }

// frameErr writes a frame and returns the connection's error.
func (fr frames) frameErr(stream byte, s string) error {
	hdr := make([]byte, 8)
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(s)))
	_, err := fr.w.Write(append(hdr, s...))
	return err
}

// runExec takes the connection over, as the daemon does, and runs the
// exec's program.
func (f *fakeDaemon) runExec(w http.ResponseWriter, e *fakeExec) {
	conn, brw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	f.mu.Lock()
	f.conns[conn] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, conn)
		f.mu.Unlock()
		conn.Close()
	}()
	// A response without a length: the body ends when the connection
	// closes. Without an Upgrade header in the request the daemon answers
	// 200 with the raw-stream media type whatever the API version (only
	// its 101 answer to an Upgrade says multiplexed-stream, from 1.42),
	// and copies the headers set before the connection was taken over.
	_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\nApi-Version: " + f.version + "\r\n\r\n")
	_ = brw.Flush()
	code, ok := f.run(e, frames{conn}, conn)
	if !ok {
		return
	}
	f.mu.Lock()
	e.running, e.exit = false, &code
	f.mu.Unlock()
}

// inspections returns how many times the exec of command was inspected.
func (f *fakeDaemon) inspections(command string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.execs {
		if len(e.cfg.Cmd) > 0 && e.cfg.Cmd[len(e.cfg.Cmd)-1] == command {
			return e.inspect
		}
	}
	return 0
}

// run runs an exec's program; ok false means the daemon "vanished".
func (f *fakeDaemon) run(e *fakeExec, fr frames, conn net.Conn) (code int, ok bool) {
	close(e.started)
	cmd := e.cfg.Cmd
	if len(cmd) == 6 && cmd[3] == killArgv0 {
		return f.kill(cmd[4], cmd[5], fr), true
	}
	command := cmd[len(cmd)-1]
	// wait waits for a signal the program does not ignore.
	wait := func(ignore ...string) (string, bool) {
		for {
			select {
			case s := <-e.sig:
				if !contains(ignore, s) {
					return s, true
				}
			case <-f.closing:
				return "", false
			}
		}
	}
	switch {
	case strings.HasPrefix(command, "echo "):
		fr.frame(streamStdout, strings.TrimPrefix(command, "echo ")+"\n")
		return 0, true
	case command == "fail":
		fr.frame(streamStdout, "checking\n")
		fr.frame(streamStderr, "boom\n")
		return 3, true
	case command == "interleave":
		fr.frame(streamStdout, "a")
		fr.frame(streamStderr, "b")
		fr.frame(streamStdout, "") // an empty frame
		// A frame whose header and payload arrive in pieces.
		_, _ = conn.Write([]byte{streamStdout, 0, 0})
		time.Sleep(10 * time.Millisecond)
		_, _ = conn.Write([]byte{0, 0, 0, 0, 3, 'c'})
		time.Sleep(10 * time.Millisecond)
		_, _ = conn.Write([]byte("d\n"))
		fr.frame(streamStdin, "e\n")
		return 0, true
	case command == "sleep":
		fr.frame(streamStdout, "started\n")
		s, ok := wait()
		if !ok {
			return 0, false
		}
		if s == "TERM" {
			fr.frame(streamStderr, "terminated\n")
			return 143, true
		}
		return 137, true
	case command == "fill":
		// "sleep", with a filler after its first line.
		fr.frame(streamStdout, "started\n")
		if fr.frameErr(streamStdout, strings.Repeat("x", fillSize)) == nil {
			f.filledOnce.Do(func() { close(f.filled) })
		}
		if s, ok := wait(); !ok || s != "TERM" {
			return 137, ok
		}
		return 143, true
	case command == "stubborn":
		fr.frame(streamStdout, "started\n")
		if _, ok := wait("TERM"); !ok {
			return 0, false
		}
		return 137, true
	case command == "immortal":
		fr.frame(streamStdout, "started\n")
		wait("TERM", "KILL")
		return 0, false
	case strings.HasPrefix(command, "big "):
		var n int
		fmt.Sscan(strings.TrimPrefix(command, "big "), &n)
		chunk := strings.Repeat("x", 1000)
		for n > 0 {
			k := min(n, len(chunk))
			fr.frame(streamStdout, chunk[:k])
			n -= k
		}
		return 0, true
	case command == "vanish":
		fr.frame(streamStdout, "partial output\n")
		_, _ = conn.Write([]byte{streamStdout, 0, 0, 0, 0, 0, 0, 100, 'x'})
		go f.close() // the daemon goes away
		return 0, false
	case command == "startfail":
		// The daemon writes an error of starting the process into the
		// stream as standard output, ending with CRLF, and records an exit
		// code of 126 or 127.
		fr.frame(streamStdout, "OCI runtime exec failed: exec failed: unable to start container process: exec: \"bash\": executable file not found in $PATH: unknown\r\n")
		return 127, true
	case command == "systemerr":
		fr.frame(streamSystem, "OCI runtime exec failed: exec failed: unable to start container process\n")
		return 126, true
	case command == "slowstart":
		// The program's process exists only a moment after the exec
		// starts: the first signal, sent before that, reaches nothing.
		fr.frame(streamStdout, "starting\n")
		for missed := false; ; missed = true {
			s, ok := wait()
			if !ok {
				return 0, false
			}
			if !missed {
				continue
			}
			if s == "TERM" {
				return 143, true
			}
			return 137, true
		}
	case command == "detach":
		// The program closes its output (exec >log 2>&1) and carries on
		// until a signal ends it.
		fr.frame(streamStdout, "detached\n")
		conn.Close()
		s, ok := wait()
		if !ok {
			return 0, false
		}
		if s == "TERM" {
			return 143, true
		}
		return 137, true
	case command == "gate":
		// Writes, waits for the test to open the gate, writes more and
		// exits with 4.
		fr.frame(streamStdout, "one\n")
		select {
		case <-f.gate:
		case s := <-e.sig:
			if s == "TERM" {
				return 143, true
			}
			return 137, true
		case <-f.closing:
			return 0, false
		}
		fr.frame(streamStderr, "two\n")
		fr.frame(streamStdout, "three\n")
		return 4, true
	case command == "tick":
		// Writes a numbered line every few milliseconds until a signal
		// ends it, or its stream is closed.
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for i := 1; ; i++ {
			if err := fr.frameErr(streamStdout, fmt.Sprintf("tick %d\n", i)); err != nil {
				return 0, false
			}
			select {
			case <-t.C:
			case s := <-e.sig:
				if s == "TERM" {
					fr.frame(streamStderr, "terminated\n")
					return 143, true
				}
				return 137, true
			case <-f.closing:
				return 0, false
			}
		}
	case command == "linger":
		fr.frame(streamStdout, "done\n")
		return 0, true
	}
	fr.frame(streamStderr, "sh: "+command+": not found\n")
	return 127, true
}

// kill delivers sig to the running execs tagged tag and prints how many.
func (f *fakeDaemon) kill(tag, sig string, fr frames) int {
	n := 0
	f.mu.Lock()
	started := false
	for _, e := range f.execs {
		if e.tag == tag {
			select {
			case <-e.started:
				started = true
			default:
			}
		}
	}
	if !started {
		f.earlyKills++
	}
	for _, e := range f.execs {
		if e.tag == tag && e.running {
			select {
			case e.sig <- sig:
				n++
			default:
			}
		}
	}
	f.mu.Unlock()
	fr.frame(streamStdout, fmt.Sprintf("%d\n", n))
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
