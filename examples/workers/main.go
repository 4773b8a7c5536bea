package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/postgres"
	"github.com/trellis-go/trellis/runs/sqlite"
	"github.com/trellis-go/trellis/tool"
)

func main() {
	if err := mainErr(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "workers:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	role     string // all, producer or worker
	db       string // the SQLite file
	postgres string // a PostgreSQL URL, instead of SQLite
	runs     int
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	fs.StringVar(&c.role, "role", "all", "all: start two worker processes and produce runs; producer; worker")
	fs.StringVar(&c.db, "db", "", "the SQLite file runs are kept in (a new one in a temporary directory by default)")
	fs.StringVar(&c.postgres, "postgres", "", "keep runs in PostgreSQL at this URL instead of SQLite")
	fs.IntVar(&c.runs, "runs", 12, "how many runs the producer starts")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch c.role {
	case "all", "producer", "worker":
	default:
		return c, fmt.Errorf("-role %q: want all, producer or worker", c.role)
	}
	if c.role != "all" && c.db == "" && c.postgres == "" {
		return c, errors.New("a producer or a worker alone needs -db or -postgres, shared with the others")
	}
	return c, nil
}

func mainErr(args []string) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return run(ctx, os.Stdout, c, func(args ...string) *exec.Cmd { return exec.Command(self, args...) })
}

// run plays c's role. spawn makes the command of a worker process.
func run(ctx context.Context, w io.Writer, c config, spawn func(args ...string) *exec.Cmd) error {
	if c.role == "all" && c.db == "" && c.postgres == "" {
		dir, err := os.MkdirTemp("", "trellis-workers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.db = filepath.Join(dir, "runs.db")
	}
	m, err := open(ctx, c, c.role)
	if err != nil {
		return err
	}
	defer m.Close()
	if c.role == "worker" {
		fmt.Fprintln(w, "worker: working until SIGTERM")
		return m.Work(ctx)
	}
	if c.role == "all" {
		stopWorkers, err := startWorkers(c, spawn, w)
		if err != nil {
			return err
		}
		defer stopWorkers()
	}
	return produce(ctx, w, m, c.runs)
}

// open opens a Manager where c says, with the example's agent registered.
func open(ctx context.Context, c config, id string) (*runs.Manager, error) {
	host, _ := os.Hostname()
	opts := []runs.Option{
		runs.WithWorkerID(fmt.Sprintf("%s-%s-%d", id, host, os.Getpid())),
		// A few runs at a time each, so that the two workers share them.
		runs.WithConcurrency(3),
	}
	var (
		m   *runs.Manager
		err error
	)
	if c.postgres != "" {
		m, err = postgres.Open(ctx, c.postgres, postgres.WithRuns(opts...))
	} else {
		m, err = sqlite.Open(ctx, c.db, sqlite.WithRuns(opts...))
	}
	if err != nil {
		return nil, err
	}
	g, err := agent.NewReAct(librarian{},
		agent.WithName("librarian"),
		agent.WithTools(lookup()),
		agent.WithCheckpointer(m.Saver()))
	if err == nil {
		err = m.Register(runs.Graph(g))
	}
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// startWorkers starts two worker processes on c's database and returns a
// function that stops them with SIGTERM and waits for them.
func startWorkers(c config, spawn func(args ...string) *exec.Cmd, w io.Writer) (func(), error) {
	args := []string{"-role", "worker"}
	if c.postgres != "" {
		args = append(args, "-postgres", c.postgres)
	} else {
		args = append(args, "-db", c.db)
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, cmd := range cmds {
			_ = cmd.Wait()
		}
	}
	for range 2 {
		cmd := spawn(args...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, cmd)
		fmt.Fprintf(w, "started worker process %d\n", cmd.Process.Pid)
	}
	return stop, nil
}

// produce starts n runs, streams the first, waits for all, and says which
// worker answered each.
func produce(ctx context.Context, w io.Writer, m *runs.Manager, n int) error {
	books := []string{"Dune", "Emma", "Ulysses", "Beloved"}
	var started []runs.Run
	for i := range n {
		book := books[i%len(books)]
		in := fmt.Sprintf(`{"messages":[{"role":"user","content":[{"type":"text","text":"Who wrote %s?"}]}]}`, book)
		r, err := m.Start(ctx, runs.Request{Graph: "librarian", Input: []byte(in), Metadata: map[string]any{"book": book}})
		if err != nil {
			return err
		}
		started = append(started, r)
	}
	fmt.Fprintf(w, "started %d runs; the first one's events, from whichever worker runs it:\n", n)
	for ev, err := range m.Stream(ctx, started[0].ID, 0) {
		if err != nil {
			return err
		}
		switch ev.Kind {
		case runs.KindRunEnd:
			fmt.Fprintf(w, "  %3d %s (%s)\n", ev.Seq, ev.Kind, ev.Status)
		default:
			fmt.Fprintf(w, "  %3d %s %s\n", ev.Seq, ev.Kind, ev.Node)
		}
	}
	byWorker := map[string]int{}
	for _, r := range started {
		done, err := m.Wait(ctx, r.ID)
		if err != nil {
			return err
		}
		if done.Status != runs.StatusSuccess {
			return fmt.Errorf("run %s ended %s: %s", done.ID, done.Status, done.Error)
		}
		byWorker[done.Worker]++
	}
	workers := make([]string, 0, len(byWorker))
	for id := range byWorker {
		workers = append(workers, id)
	}
	slices.Sort(workers)
	fmt.Fprintln(w, "every run answered; runs per worker:")
	for _, id := range workers {
		fmt.Fprintf(w, "  %s: %d\n", id, byWorker[id])
	}
	found, err := m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{"book": "Dune"}, Limit: runs.MaxLimit})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "threads about Dune: %d\n", len(found))
	return nil
}

// librarian is the offline model: it looks the book up, then answers with
// what the tool said. It decides from the request alone, so that any
// process's copy plays any run, and its script never runs out.
type librarian struct{}

// Generate answers req.
func (librarian) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == model.RoleTool {
		return &model.Response{Message: model.Assistant(strings.TrimSpace(last.Text()))}, nil
	}
	title := strings.TrimSuffix(strings.TrimPrefix(last.Text(), "Who wrote "), "?")
	call := model.ToolCall{ID: "call-" + title, Name: "lookup", Arguments: []byte(fmt.Sprintf(`{"title":%q}`, title))}
	return &model.Response{Message: model.Assistant("", call)}, nil
}

// Stream answers req in one chunk.
func (l librarian) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	resp, err := l.Generate(ctx, req)
	if err != nil {
		return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, err) }
	}
	return model.ResponseChunks(resp)
}

type lookupIn struct {
	Title string `json:"title"`
}

// lookup is the librarian's tool: a slow catalogue.
func lookup() tool.Tool {
	authors := map[string]string{"Dune": "Frank Herbert", "Emma": "Jane Austen", "Ulysses": "James Joyce", "Beloved": "Toni Morrison"}
	return tool.MustFunc("lookup", "Finds who wrote a book.", func(ctx context.Context, in lookupIn) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(40 * time.Millisecond):
		}
		if a, ok := authors[in.Title]; ok {
			return in.Title + " was written by " + a + ".", nil
		}
		return "", fmt.Errorf("no book titled %q", in.Title)
	})
}
