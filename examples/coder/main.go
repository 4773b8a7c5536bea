package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/provider"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/coding"
	"github.com/trellis-go/trellis/tool/shell"
)

// task is what the agent is asked to do unless told otherwise.
const task = "The tests of this Go module fail. Find the bug, fix it, and check that `go test ./...` passes."

// project is the module the agent works on: a package whose SumTo stops one
// short of n, and a test that catches it. Its go.mod is stored as
// go.mod.txt: a file named go.mod would make the directory a module of its
// own, which embed cannot reach into.
//
//go:embed testdata/project
var project embed.FS

// projectRoot is the project's directory in the embedded file system.
const projectRoot = "testdata/project"

// systemPrompt tells a real model how to work; the offline script follows
// the same steps.
const systemPrompt = "You are a careful Go developer working in a small Go module, the directory your tools work in. " +
	"Run the tests with bash (go test ./...), read the code with read_file, fix the bug with edit_file, " +
	"then run the tests again. Make the smallest change that fixes the bug and do not change the tests. " +
	"Some calls need the user's approval; when one is refused, do not try to get around it: say what you would have done. " +
	"End with a short summary of what was wrong and what you changed."

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "coder:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	// Ctrl-C cancels the run: a model request, a command or a permission
	// question in flight stops.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := start(ctx, os.Stdout, os.Getenv, os.Args[1:])
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
}

// start picks the model the environment selects (see package
// examples/internal/provider), or the offline script, and runs the agent on
// the task args give. With a real model, a person approves the destructive
// calls on standard input.
func start(ctx context.Context, w io.Writer, getenv func(string) string, args []string) error {
	_, err := startWith(ctx, w, getenv, args, os.Stdin)
	return err
}

// startWith is start with the person's answers read from in. It returns
// what the run left behind.
func startWith(ctx context.Context, w io.Writer, getenv func(string) string, args []string, in io.Reader) (*report, error) {
	m, which, err := provider.Lookup(getenv)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return nil, fmt.Errorf("the agent runs go test in its project, and needs the go command: %w", err)
	}
	t := task
	if len(args) > 0 {
		t = strings.Join(args, " ")
	}
	fmt.Fprintf(w, "model: %s\n", which)
	perm := askOn(in)
	if m == nil {
		// No one to ask: the offline run approves every call, and says so.
		m, perm = offline(), approveAll()
		if t != task {
			fmt.Fprintln(w, "(the offline script does its own task only)")
			t = task
		}
	}
	return run(ctx, w, t, m, perm)
}

// report is what a run left behind: the project's files before and after
// it, by path, and the permission decisions.
type report struct {
	before, after map[string]string
	decisions     []decision
}

// run copies the project into a temporary directory, runs the agent on it
// with m, printing the trace and then the changes the agent made to w, and
// removes the directory. perm decides on the agent's calls; run stops it.
// trace adds to the tracer's options.
func run(ctx context.Context, w io.Writer, task string, m model.Model, perm *approver, trace ...agent.TraceOption) (*report, error) {
	defer perm.stop()
	dir, err := os.MkdirTemp("", "trellis-coder-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := copyProject(dir); err != nil {
		return nil, err
	}
	before, err := snapshot(dir)
	if err != nil {
		return nil, err
	}
	set, err := coding.New(dir, coding.WithoutWeb(), coding.WithShellOptions(shellOptions()...))
	if err != nil {
		return nil, err
	}
	defer set.Close() // kills a command still running; runs before RemoveAll
	coder, err := agent.NewReAct(m,
		agent.WithName("coder"),
		agent.WithSystemPrompt(systemPrompt),
		agent.WithToolsets(set),
		// The policy is consulted for every call before it runs; the time a
		// person takes to answer is not bounded.
		agent.WithMiddleware(middleware.Permission(perm)),
	)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "project: %s (copied to a temporary directory)\ntask: %s\n\n", strings.Join(slices.Sorted(maps.Keys(before)), ", "), task)

	runErr := printTrace(w, coder.Stream(ctx, agent.Ask(task), graph.WithModes(graph.ModeEvents|graph.ModeUpdates|graph.ModeCustom)), trace)
	after, err := snapshot(dir)
	rep := &report{before: before, after: after, decisions: perm.decisions()}
	if runErr != nil {
		return rep, runErr
	}
	if err != nil {
		return rep, err
	}
	printChanges(w, before, after)
	return rep, nil
}

// printTrace prints the events of a run with a tracer, except the
// approver's, which it prints in full: the tracer would cut them to one
// line, and a person must see all of what they are asked to approve. It
// returns the run's error.
func printTrace(w io.Writer, events iter.Seq2[graph.Event, error], opts []agent.TraceOption) error {
	t := agent.NewTracer(w, append([]agent.TraceOption{agent.TraceWidth(120)}, opts...)...)
	for ev, err := range events {
		if err != nil {
			t.Fail(err)
			return err
		}
		if text, ok := ev.Payload.(string); ok && ev.Kind == graph.KindCustom && ev.Name == permissionEvent {
			first, more, _ := strings.Cut(text, "\n")
			fmt.Fprintf(w, "%s • %s: %s\n", ev.Graph, permissionEvent, first)
			for l := range strings.SplitSeq(more, "\n") {
				if l != "" {
					fmt.Fprintf(w, "    %s\n", l)
				}
			}
			continue
		}
		t.Print(ev)
	}
	return t.Err()
}

// shellOptions configure the agent's commands. They start from a clean
// environment, so that a command cannot read the API keys of the process,
// with what the go command needs; GOTOOLCHAIN=local keeps go from
// downloading another toolchain, GOWORK=off from picking up a workspace
// file above the temporary directory. The project has no dependencies, so
// go test needs no network.
func shellOptions() []shell.Option {
	env := []string{"GOTOOLCHAIN=local", "GOWORK=off"}
	for _, k := range []string{"HOME", "TMPDIR", "GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOENV", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return []shell.Option{shell.WithCleanEnv(), shell.WithEnv(env...), shell.WithTimeout(2 * time.Minute)}
}

// copyProject writes the embedded project into dir.
func copyProject(dir string) error {
	return fs.WalkDir(project, projectRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := project.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, projectRoot+"/")
		if path.Base(rel) == "go.mod.txt" {
			rel = path.Join(path.Dir(rel), "go.mod")
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

// snapshot reads the files under dir, by slash-separated path.
func snapshot(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	return files, err
}

// printChanges prints what differs between the two snapshots: files added
// and removed, and the lines changed in the others.
func printChanges(w io.Writer, before, after map[string]string) {
	paths := maps.Clone(before)
	maps.Copy(paths, after)
	fmt.Fprintln(w, "\nchanges on disk:")
	changed := false
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		old, hadOld := before[p]
		cur, hasCur := after[p]
		switch {
		case !hadOld:
			fmt.Fprintf(w, "  %s (new, %d bytes)\n", p, len(cur))
		case !hasCur:
			fmt.Fprintf(w, "  %s (removed)\n", p)
		case old != cur:
			fmt.Fprintf(w, "  %s\n", p)
			for _, l := range diffLines(strings.Split(old, "\n"), strings.Split(cur, "\n")) {
				fmt.Fprintf(w, "    %s\n", l)
			}
		default:
			continue
		}
		changed = true
	}
	if !changed {
		fmt.Fprintln(w, "  none")
	}
}

// diffLines returns the lines of a that b drops ("-", numbered in a) and
// the lines b adds ("+", numbered in b), found from a longest common
// subsequence of the two; the files are small, so the quadratic table is
// cheap.
func diffLines(a, b []string) []string {
	// common[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:].
	common := make([][]int, len(a)+1)
	for i := range common {
		common[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	show := func(sign string, n int, line string) string {
		return fmt.Sprintf("%s %3d  %s", sign, n, strings.ReplaceAll(line, "\t", "    "))
	}
	var out []string
	for i, j := 0, 0; i < len(a) || j < len(b); {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || common[i+1][j] >= common[i][j+1]):
			out = append(out, show("-", i+1, a[i]))
			i++
		default:
			out = append(out, show("+", j+1, b[j]))
			j++
		}
	}
	return out
}
