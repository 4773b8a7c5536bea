package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The LangGraph.js peers run in Node, in the same benchmark run: a
// benchmark starts node/chain3.mjs and drives it through its standard
// input, one command a line, reading one JSON answer a line.

// needNode skips tb, saying how to install the peers, when Node or the
// npm packages of bench/node are missing. CI installs them (.ci/run), and
// fails instead of skipping.
func needNode(tb testing.TB) string {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("node", "node_modules", "@langchain", "langgraph", "package.json"))
	}
	if err != nil {
		msg := "LangGraph.js comparison skipped: Node or the packages of bench/node are missing (run `npm ci` in bench/node): " + err.Error()
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return node
}

// A peer is a running node/chain3.mjs.
type peer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	done  chan struct{}
	log   *strings.Builder
}

// startPeer starts node/chain3.mjs in mode for store and durability, with
// env added to the environment, and waits for it to be ready. It is
// stopped when tb ends.
func startPeer(tb testing.TB, mode, store, durability string, env ...string) *peer {
	tb.Helper()
	node := needNode(tb)
	cmd := exec.Command(node, "chain3.mjs", mode, store, durability)
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), env...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &peer{cmd: cmd, in: in, lines: make(chan string, 1), done: make(chan struct{}), log: stderr}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() { p.stop(tb) })
	var ready struct{ Ready bool }
	p.answer(tb, 2*time.Minute, &ready)
	return p
}

// answer reads the peer's next line into v, failing tb if none comes
// within d.
func (p *peer) answer(tb testing.TB, d time.Duration, v any) {
	tb.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.done
			tb.Fatalf("node/chain3.mjs ended: %v\n%s", p.cmd.ProcessState, p.log.String())
		}
		if err := json.Unmarshal([]byte(line), v); err != nil {
			tb.Fatalf("node/chain3.mjs said %q: %v", line, err)
		}
	case <-time.After(d):
		tb.Fatalf("node/chain3.mjs did not answer within %v\n%s", d, p.log.String())
	}
}

// runs has the peer run Chain3 n times and waits for it to finish.
func (p *peer) runs(tb testing.TB, n int) {
	tb.Helper()
	if _, err := fmt.Fprintf(p.in, "{\"runs\":%d}\n", n); err != nil {
		tb.Fatalf("node/chain3.mjs: %v\n%s", err, p.log.String())
	}
	var done struct{ Runs int }
	p.answer(tb, time.Minute+time.Duration(n)*time.Second, &done)
	if done.Runs != n {
		tb.Fatalf("node/chain3.mjs ran %d runs, want %d", done.Runs, n)
	}
}

// stop closes the peer's input, on which it exits, and kills it if it has
// not within ten seconds.
func (p *peer) stop(tb testing.TB) {
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		tb.Logf("node/chain3.mjs did not exit when its input closed; killed")
	}
}
