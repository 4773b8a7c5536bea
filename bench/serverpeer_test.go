package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The LangGraph Server API side by side: Trellis's server (package server,
// as serverUnderTest sets it up, on each runs backend) and the LangGraph.js
// reference server (@langchain/langgraph-api, the in-memory server behind
// `langgraph dev`, started by node/server.mjs), in the same benchmark run,
// each serving two shapes of graph — three nodes in a row ("chain3"), and
// a ReAct agent on a scripted model, model → tool → model ("react") — all
// driven by the same client: the official SDK (@langchain/langgraph-sdk)
// in node/server.mjs's driver.

// A passSize is what one pass of the driver does against a server: seq
// sequential runs, clients concurrent clients doing perClient runs each,
// and streams streamed runs.
type passSize struct {
	seq, clients, perClient, streams int
}

// Each benchmark iteration is one pass of the driver over each server. The
// reference takes about a second a run, so its pass is kept small for the
// one-iteration pass of CI; Trellis's is larger, so that its rates are not
// a handful of milliseconds' worth. More iterations (-benchtime=5x) pool
// more samples.
var (
	referencePass = passSize{seq: 5, clients: 32, perClient: 1, streams: 10}
	trellisPass   = passSize{seq: 50, clients: 32, perClient: 4, streams: 50}
)

// A serverPass is what node/server.mjs's driver prints for one pass.
type serverPass struct {
	SeqRuns  int       `json:"seq_runs"`
	SeqMs    float64   `json:"seq_ms"`
	ConcRuns int       `json:"conc_runs"`
	ConcMs   float64   `json:"conc_ms"`
	CPUMs    float64   `json:"cpu_ms"` // the driver's, over the sequential and concurrent runs
	FirstMs  []float64 `json:"first_ms"`
	ValuesMs []float64 `json:"values_ms"`
}

// serverFigures pools the passes over one server.
type serverFigures struct {
	seqRuns, concRuns int
	seqMs, concMs     float64
	cpuMs             float64 // the driver's CPU time over the sequential and concurrent runs
	first, values     []float64
}

func (f *serverFigures) add(p serverPass) {
	f.seqRuns += p.SeqRuns
	f.seqMs += p.SeqMs
	f.concRuns += p.ConcRuns
	f.concMs += p.ConcMs
	f.cpuMs += p.CPUMs
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
// url, running assistant ("chain3" or "react").
func drive(tb testing.TB, node, url, assistant string, size passSize) serverPass {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "server.mjs", "drive", url, assistant,
		strconv.Itoa(size.seq), strconv.Itoa(size.clients), strconv.Itoa(size.perClient), strconv.Itoa(size.streams))
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

// postgresReachable is nil when the test PostgreSQL server answers.
func postgresReachable() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, postgresURL())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// A serverSide is one server of the side-by-side benchmark.
type serverSide struct {
	name string // "langgraphjs", or the Trellis backend's
	url  string
	size passSize
	f    serverFigures
}

// BenchmarkServerVersusLangGraphJS drives Trellis's server, on each runs
// backend (memory, SQLite on a file, PostgreSQL), and the LangGraph.js
// reference server with the same SDK client in the same run, for each
// shape of graph (chain3, react), rotating which server goes first, and
// reports for each runs/s (sequential and with 32 concurrent clients) and
// the time to the first streamed event and to the first values event
// (median and 99th percentile), the driver's CPU time per run, and the
// ratios Trellis / reference. Beside them it drives a ceiling server
// (startCeilingServer), which answers at once with the memory backend's
// recorded replies: its figures are the most the client can drive on the
// machine, so a Trellis figure near them is bounded by the client rather
// than by the server. The
// PostgreSQL backend is left out, saying why, when the test server does
// not answer (and the benchmark fails then when CI=true).
func BenchmarkServerVersusLangGraphJS(b *testing.B) {
	node := needServerPeer(b)
	backends := serverBackends
	if err := postgresReachable(); err != nil {
		msg := fmt.Sprintf("the postgres backend is left out: postgres unreachable at %s (%v); start one, or set TRELLIS_POSTGRES_URL", postgresURL(), err)
		if os.Getenv("CI") == "true" {
			b.Fatal(msg)
		}
		b.Log(msg)
		backends = slices.DeleteFunc(slices.Clone(backends), func(s string) bool { return s == backendPostgres })
	}
	ref := startReferenceServer(b, node)
	for _, shape := range []string{"chain3", "react"} {
		b.Run(shape, func(b *testing.B) {
			sides := []*serverSide{{name: "langgraphjs", url: ref, size: referencePass}}
			for _, backend := range backends {
				srv, stop := serverUnderTest(b, backend)
				b.Cleanup(stop)
				sides = append(sides, &serverSide{name: "trellis-" + backend, url: srv.URL, size: trellisPass})
				if backend == backendMemory {
					sides = append(sides, &serverSide{name: "ceiling", url: startCeilingServer(b, srv.URL, shape), size: trellisPass})
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for j := range sides {
					s := sides[(i+j)%len(sides)]
					s.f.add(drive(b, node, s.url, shape, s.size))
				}
			}
			b.StopTimer()
			reference := &sides[0].f
			for _, s := range sides {
				b.ReportMetric(s.f.seqRate(), s.name+"-seq-runs/s")
				b.ReportMetric(s.f.concRate(), s.name+"-32clients-runs/s")
				b.ReportMetric(quantile(s.f.first, 0.5), s.name+"-first-p50-ms")
				b.ReportMetric(quantile(s.f.first, 0.99), s.name+"-first-p99-ms")
				b.ReportMetric(quantile(s.f.values, 0.5), s.name+"-values-p50-ms")
				b.ReportMetric(quantile(s.f.values, 0.99), s.name+"-values-p99-ms")
				b.ReportMetric(s.f.cpuMs/float64(s.f.seqRuns+s.f.concRuns), s.name+"-driver-cpu-ms/run")
				if s.f.seqRuns == 0 || s.name == "langgraphjs" {
					continue
				}
				b.ReportMetric(s.f.seqRate()/reference.seqRate(), s.name+"-seq-ratio-x")
				b.ReportMetric(s.f.concRate()/reference.concRate(), s.name+"-32clients-ratio-x")
				b.ReportMetric(quantile(reference.first, 0.5)/quantile(s.f.first, 0.5), s.name+"-first-p50-ratio-x")
			}
		})
	}
}

// The inputs of the shapes' runs, as node/server.mjs sends them.
var shapeInputs = map[string]string{
	"chain3": `{"n":0}`,
	"react":  `{"messages":[{"role":"user","content":"hi"}]}`,
}

// A cannedReply is one recorded answer of a server.
type cannedReply struct {
	contentType string
	body        []byte
}

// startCeilingServer records what Trellis's server at trellisURL answers
// to a waited and to a streamed stateless run of shape, then serves those
// answers at once to every such request, doing nothing else: the driver
// against it measures the most runs per second the client itself can
// drive on this machine, whatever the server — the ceiling of any
// server's figures in this benchmark.
func startCeilingServer(b *testing.B, trellisURL, shape string) string {
	b.Helper()
	record := func(path, body string) cannedReply {
		resp, err := http.Post(trellisURL+path, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("recording %s for the ceiling server: %d %s %v", path, resp.StatusCode, data, err)
		}
		return cannedReply{contentType: resp.Header.Get("Content-Type"), body: data}
	}
	in := shapeInputs[shape]
	replies := map[string]cannedReply{
		"/runs/wait":   record("/runs/wait", `{"assistant_id":"`+shape+`","input":`+in+`}`),
		"/runs/stream": record("/runs/stream", `{"assistant_id":"`+shape+`","input":`+in+`,"stream_mode":["values"]}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		reply, ok := replies[r.URL.Path]
		if !ok || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", reply.contentType)
		_, _ = w.Write(reply.body)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}
