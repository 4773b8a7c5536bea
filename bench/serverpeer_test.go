package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The LangGraph Server API side by side: Trellis's server (package server,
// as serverUnderTest sets it up) and the LangGraph.js reference server
// (@langchain/langgraph-api, the in-memory server behind `langgraph dev`,
// started by node/server.mjs), in the same benchmark run, each serving a
// graph of three nodes in a row, both driven by the same client: the
// official SDK (@langchain/langgraph-sdk) in node/server.mjs's driver.

// Each benchmark iteration is one pass of the driver over each server:
// serverPassSeq sequential runs, serverPassClients concurrent clients doing
// serverPassPerClient runs each, and serverPassStreams streamed runs. The
// reference takes about a second a run, so a pass is kept small for the
// one-iteration pass of CI; more iterations (-benchtime=5x) pool more
// samples.
const (
	serverPassSeq       = 5
	serverPassClients   = 32
	serverPassPerClient = 1
	serverPassStreams   = 10
)

// A serverPass is what node/server.mjs's driver prints for one pass.
type serverPass struct {
	SeqRuns  int       `json:"seq_runs"`
	SeqMs    float64   `json:"seq_ms"`
	ConcRuns int       `json:"conc_runs"`
	ConcMs   float64   `json:"conc_ms"`
	FirstMs  []float64 `json:"first_ms"`
	ValuesMs []float64 `json:"values_ms"`
}

// serverFigures pools the passes over one server.
type serverFigures struct {
	seqRuns, concRuns int
	seqMs, concMs     float64
	first, values     []float64
}

func (f *serverFigures) add(p serverPass) {
	f.seqRuns += p.SeqRuns
	f.seqMs += p.SeqMs
	f.concRuns += p.ConcRuns
	f.concMs += p.ConcMs
	f.first = append(f.first, p.FirstMs...)
	f.values = append(f.values, p.ValuesMs...)
}

func (f *serverFigures) seqRate() float64  { return float64(f.seqRuns) * 1000 / f.seqMs }
func (f *serverFigures) concRate() float64 { return float64(f.concRuns) * 1000 / f.concMs }

// quantile is the q-quantile of xs (nearest rank), or 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

// needServerPeer is needNode, also requiring the reference server and the
// SDK in bench/node.
func needServerPeer(tb testing.TB) string {
	tb.Helper()
	node := needNode(tb)
	for _, pkg := range []string{"langgraph-api", "langgraph-sdk"} {
		if _, err := os.Stat(filepath.Join("node", "node_modules", "@langchain", pkg, "package.json")); err != nil {
			msg := "LangGraph.js reference server comparison skipped: @langchain/" + pkg + " is missing (run `npm ci` in bench/node): " + err.Error()
			if os.Getenv("CI") == "true" {
				tb.Fatal(msg)
			}
			tb.Skip(msg)
		}
	}
	return node
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail is the end of the file at path, for failure messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// startReferenceServer starts the LangGraph.js reference server
// (node/server.mjs serve) on 127.0.0.1, waits until it answers, and
// returns its URL. It is killed when tb ends.
func startReferenceServer(tb testing.TB, node string) string {
	tb.Helper()
	dir := tb.TempDir()
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		tb.Fatal(err)
	}
	port := freePort(tb)
	cmd := exec.Command(node, "server.mjs", "serve", strconv.Itoa(port), dir)
	cmd.Dir = "node"
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logFile.Close()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := c.Get(url + "/ok")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.CloseIdleConnections()
				return url
			}
		}
		select {
		case <-exited:
			tb.Fatalf("node/server.mjs serve exited: %v\n%s", cmd.ProcessState, tail(logPath))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("node/server.mjs serve did not answer on %s within 2m\n%s", url, tail(logPath))
		}
	}
}

// drive runs one pass of node/server.mjs's driver against the server at
// url, running Chain3 as assistant.
func drive(tb testing.TB, node, url, assistant string) serverPass {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "server.mjs", "drive", url, assistant,
		strconv.Itoa(serverPassSeq), strconv.Itoa(serverPassClients), strconv.Itoa(serverPassPerClient), strconv.Itoa(serverPassStreams))
	cmd.Dir = "node"
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("node/server.mjs drive %s: %v\n%s", url, err, stderr.String())
	}
	var p serverPass
	if err := json.Unmarshal(out, &p); err != nil {
		tb.Fatalf("node/server.mjs drive %s said %q: %v", url, out, err)
	}
	return p
}

// BenchmarkServerVersusLangGraphJS drives Trellis's server and the
// LangGraph.js reference server with the same SDK client in the same run,
// alternating which goes first, and reports for each runs/s (sequential
// and with 32 concurrent clients) and the time to the first streamed event
// and to the first values event (median and 99th percentile), and the
// ratios Trellis / reference of the rates.
func BenchmarkServerVersusLangGraphJS(b *testing.B) {
	node := needServerPeer(b)
	srv, stop := serverUnderTest(b)
	defer stop()
	ref := startReferenceServer(b, node)
	var trellis, langgraph serverFigures
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			trellis.add(drive(b, node, srv.URL, "chain3"))
			langgraph.add(drive(b, node, ref, "chain3"))
		} else {
			langgraph.add(drive(b, node, ref, "chain3"))
			trellis.add(drive(b, node, srv.URL, "chain3"))
		}
	}
	b.StopTimer()
	for _, s := range []struct {
		name string
		f    *serverFigures
	}{{"trellis", &trellis}, {"langgraphjs", &langgraph}} {
		b.ReportMetric(s.f.seqRate(), s.name+"-seq-runs/s")
		b.ReportMetric(s.f.concRate(), s.name+"-32clients-runs/s")
		b.ReportMetric(quantile(s.f.first, 0.5), s.name+"-first-p50-ms")
		b.ReportMetric(quantile(s.f.first, 0.99), s.name+"-first-p99-ms")
		b.ReportMetric(quantile(s.f.values, 0.5), s.name+"-values-p50-ms")
		b.ReportMetric(quantile(s.f.values, 0.99), s.name+"-values-p99-ms")
	}
	b.ReportMetric(trellis.seqRate()/langgraph.seqRate(), "seq-ratio-x")
	b.ReportMetric(trellis.concRate()/langgraph.concRate(), "32clients-ratio-x")
	b.ReportMetric(quantile(langgraph.first, 0.5)/quantile(trellis.first, 0.5), "first-p50-ratio-x")
}
