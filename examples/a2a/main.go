package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/provider"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/tool"
)

// question is what the system answers unless told otherwise.
const question = "Write a short note on the history of Go for the team newsletter."

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "a2a:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	// Ctrl-C cancels the run: the supervisor's calls stop, and the task
	// the researcher is working on is canceled.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := start(ctx, os.Stdout, os.Getenv, os.Args[1:])
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
}

// start picks the models the environment selects (see package
// examples/internal/provider), or the offline scripts, and runs the system
// on the question args give.
func start(ctx context.Context, w io.Writer, getenv func(string) string, args []string) error {
	_, err := run(ctx, w, getenv, args, setup{})
	return err
}

// setup is what a test changes in a run.
type setup struct {
	// beforeRun runs once the supervisor's tool has read the researcher's
	// card, before the supervisor runs.
	beforeRun func(researcher *httptest.Server)
	// trace adds to the tracer's options.
	trace []agent.TraceOption
}

// models are the models of the three agents.
type models struct {
	supervisor, researcher, writer model.Model
	describe                       string
	offline                        bool
}

// chooseModels picks the provider the environment selects; all three
// agents, on both sides of the A2A connection, then share its model.
// Without one, each agent gets its scripted model.
func chooseModels(getenv func(string) string) (models, error) {
	m, which, err := provider.Lookup(getenv)
	if err != nil {
		return models{}, err
	}
	if m != nil {
		return models{supervisor: m, researcher: m, writer: m, describe: which}, nil
	}
	return models{
		supervisor: scriptedSupervisor(),
		researcher: scriptedResearcher(),
		writer:     scriptedWriter(),
		describe:   which,
		offline:    true,
	}, nil
}

// run serves the researcher over A2A on 127.0.0.1, makes a tool of it from
// its card, runs the supervisor on the question and prints the card, the
// trace and the HTTP requests the researcher's server answered to w. It
// returns those requests.
func run(ctx context.Context, w io.Writer, getenv func(string) string, args []string, s setup) (*wireLog, error) {
	team, err := chooseModels(getenv)
	if err != nil {
		return nil, err
	}
	q := question
	if len(args) > 0 {
		q = strings.Join(args, " ")
	}
	fmt.Fprintf(w, "models: %s\n", team.describe)
	if team.offline && q != question {
		fmt.Fprintln(w, "(the offline scripts answer their own question only)")
		q = question
	}

	// The researcher: a ReAct agent served over A2A. In production it runs
	// in another process, or is another framework's agent; here it listens
	// on a port of 127.0.0.1 in this one.
	researcher, err := agent.NewReAct(team.researcher,
		agent.WithName("researcher"),
		agent.WithSystemPrompt("You are a careful researcher. Look each topic up with the lookup tool (several lookups at once when it helps), then reply with the facts found, one per line, each starting with \"- \". Use only what the notes say."),
		agent.WithTools(lookupTool()))
	if err != nil {
		return nil, err
	}
	srv, err := a2a.NewServer("Researcher", "Looks facts up in the team's reference notes and returns them as a list.", researcher,
		a2a.WithSkills(a2a.Skill{ID: "facts", Name: "Fact lookup", Description: "Finds facts about the history of Go in the team's notes.", Tags: []string{"research", "go"}}))
	if err != nil {
		return nil, err
	}
	wire := &wireLog{next: srv}
	hs := httptest.NewServer(wire)
	defer func() {
		srv.Close() // cancels the tasks still running and ends their streams
		hs.Close()
	}()

	// The supervisor's side: a client reads the card, and the card makes
	// the tool. The tool leaves out the context_id line at the end of its
	// results: this supervisor never continues a conversation.
	client, err := a2a.NewClient(hs.URL)
	if err != nil {
		return nil, err
	}
	card, err := client.Card(ctx)
	if err != nil {
		return nil, err
	}
	printCard(w, card, hs)
	remote, err := client.Tool(ctx, a2a.WithoutContextHint())
	if err != nil {
		return nil, err
	}
	if s.beforeRun != nil {
		s.beforeRun(hs)
	}

	writer, err := agent.NewReAct(team.writer,
		agent.WithName("writer"),
		agent.WithSystemPrompt("You write short, friendly notes for a team newsletter from the facts you are given, and nothing else. Reply with the note only, a title on its first line."))
	if err != nil {
		return nil, err
	}
	sup, err := agent.NewSupervisor(team.supervisor, []agent.Worker{
		{Tool: remote}, // its name and description come from the card
		{Name: "writer", Description: "Writes short newsletter notes from facts. Give it the facts as context.", Agent: writer},
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "question: %s\n\n", q)
	events := sup.Stream(ctx, agent.Ask(q), graph.WithModes(graph.ModeEvents|graph.ModeUpdates))
	trace := agent.NewTracer(w, append([]agent.TraceOption{agent.TraceWidth(100)}, s.trace...)...)
	for ev, err := range events {
		if err != nil {
			trace.Fail(err)
			return wire, err
		}
		if skip(ev) {
			continue
		}
		trace.Print(ev)
	}
	if err := trace.Err(); err != nil {
		return wire, err
	}
	fmt.Fprintln(w, "\nHTTP requests the researcher's server answered:")
	for _, r := range wire.requests() {
		fmt.Fprintf(w, "  %s\n", r)
	}
	return wire, nil
}

// skip reports whether the trace leaves an event out: the pieces of text
// the researcher's model streams, which the A2A tool reports as progress
// with content, a word at a time. The researcher's status updates
// ("Calling lookup."), progress with a message, stay.
func skip(ev graph.Event) bool {
	e, ok := ev.Payload.(executor.Event)
	return ok && ev.Kind == nodes.KindToolUpdate && e.Update.Message == ""
}

// printCard prints what the client read of the researcher's card, with the
// server's port, which changes from run to run, left out.
func printCard(w io.Writer, card *a2a.Card, hs *httptest.Server) {
	base := hs.URL
	if addr, ok := hs.Listener.Addr().(*net.TCPAddr); ok {
		base = "http://" + net.JoinHostPort(addr.IP.String(), "<port>")
	}
	norm := func(u string) string { return strings.ReplaceAll(u, hs.URL, base) }
	fmt.Fprintf(w, "agent card (%s%s):\n", base, a2a.CardPath)
	fmt.Fprintf(w, "  name:        %s (version %s)\n", card.Name, card.Version)
	fmt.Fprintf(w, "  description: %s\n", card.Description)
	for i, sk := range card.Skills {
		label := "skills:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "  %-12s %s (%s): %s\n", label, sk.ID, sk.Name, sk.Description)
	}
	fmt.Fprintf(w, "  streaming:   %t\n", card.Capabilities.Streaming)
	for i, in := range card.SupportedInterfaces {
		label := "interfaces:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "  %-12s %s %s at %s\n", label, in.ProtocolBinding, in.ProtocolVersion, norm(in.URL))
	}
}

// notes are what the researcher's lookup tool searches: each note, and
// the words that find it.
var notes = []struct {
	keys []string
	text string
}{
	{[]string{"designer", "design", "author", "creator", "people"}, "Go was designed at Google by Robert Griesemer, Rob Pike and Ken Thompson, starting in 2007."},
	{[]string{"announce", "open source", "open-source", "launch"}, "Go was announced as an open-source project on 10 November 2009."},
	{[]string{"go 1", "go1", "1.0", "compatib"}, "Go 1.0 came out in March 2012, with the promise that programs written for it keep compiling."},
	{[]string{"gopher", "mascot"}, "The Go gopher, the language's mascot, was drawn by Renée French."},
	{[]string{"generic", "1.18"}, "Go 1.18, in March 2022, added generics."},
}

type lookupArgs struct {
	Topic string `json:"topic" jsonschema:"minLength=1" jsonschema_description:"A word or two naming what to look up, such as designers, announcement or go 1."`
}

// lookupTool searches the notes by topic.
func lookupTool() tool.Tool {
	return tool.MustFunc("lookup", "Looks a topic up in the team's notes on the history of Go and returns the matching notes.",
		func(_ context.Context, in lookupArgs) (string, error) {
			var found []string
			for _, n := range notes {
				if matches(n.keys, in.Topic) {
					found = append(found, n.text)
				}
			}
			if len(found) == 0 {
				return "No note matches " + in.Topic + ".", nil
			}
			return strings.Join(found, "\n"), nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

// matches reports whether the query holds one of keys ("designers"
// holds "designer").
func matches(keys []string, query string) bool {
	query = strings.ToLower(query)
	for _, k := range keys {
		if strings.Contains(query, k) {
			return true
		}
	}
	return false
}

// wireLog is an http.Handler that records the requests it passes to next:
// the method, the path and, for JSON-RPC, the RPC method. It shows that the
// supervisor reached the researcher over HTTP, and how.
type wireLog struct {
	next http.Handler

	mu  sync.Mutex
	log []string
}

// peekLimit bounds the part of a request body read to find its RPC method.
const peekLimit = 64 << 10

func (l *wireLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	entry := r.Method + " " + r.URL.Path
	if r.Method == http.MethodPost {
		// Read the start of the body for its "method", and hand the server
		// the whole body: what was read, then the rest.
		head, _ := io.ReadAll(io.LimitReader(r.Body, peekLimit))
		var rpc struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(head, &rpc) == nil && rpc.Method != "" {
			entry += " " + rpc.Method
		}
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	}
	l.mu.Lock()
	l.log = append(l.log, entry)
	l.mu.Unlock()
	l.next.ServeHTTP(w, r)
}

// requests returns the requests recorded so far, in order.
func (l *wireLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}
