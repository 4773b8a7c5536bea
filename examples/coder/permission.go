package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/shell"
	"github.com/trellis-go/trellis/tool/workspace"
)

// approver is the permission policy of the agent's calls (a tool.Policy,
// which middleware.Permission consults before every call). Calls of tools
// that only read run without a word. The destructive ones — bash,
// write_file, edit_file, notebook_edit, task_stop — are put to a person,
// who answers y or n, a line of input each; the question and the answer
// appear in the trace as "permission" events, which the tracer prints in
// order with the calls. An approver without input approves them without
// asking, and the trace says what it approved.
//
// A call that is refused does not run: the model reads a denied result
// that gives the reason, and goes on from there.
type approver struct {
	in io.Reader // nil: approve without asking

	ask      sync.Mutex // one question at a time
	start    sync.Once
	answers  <-chan string
	done     chan struct{}
	stopOnce sync.Once

	mu  sync.Mutex
	log []decision
}

// permissionEvent names the custom events of the approver. Their payload
// is a string: a line, followed, for a call with more to show (the content
// of write_file), by lines of details.
const permissionEvent = "permission"

// decision is what the approver decided about one destructive call.
type decision struct {
	tool    string
	action  string // what the call does, as the question put it
	allowed bool
}

// askOn returns an approver that asks about each destructive call and
// reads the answers from in, one line each: y or yes approves, anything
// else refuses, and so does the end of in.
func askOn(in io.Reader) *approver { return &approver{in: in, done: make(chan struct{})} }

// approveAll returns an approver that approves every call without asking.
func approveAll() *approver { return &approver{done: make(chan struct{})} }

var _ tool.Policy = (*approver)(nil)

// Decide implements tool.Policy.
func (a *approver) Decide(ctx context.Context, req tool.PermissionRequest) (tool.Decision, error) {
	if !req.Metadata.Destructive {
		return tool.Allow(), nil
	}
	action, details := describe(req.Call)
	if a.in == nil {
		a.record(req.Call.Name, action, true)
		graph.EmitCustom(ctx, permissionEvent, "approved without asking (offline run): "+action+details)
		return tool.Allow(), nil
	}

	a.ask.Lock()
	defer a.ask.Unlock()
	graph.EmitCustom(ctx, permissionEvent, action+"? [y/N]"+details)
	line, ok, err := a.next(ctx)
	if err != nil {
		return tool.Decision{}, err // the run was cancelled while waiting
	}
	switch answer := strings.ToLower(strings.TrimSpace(line)); {
	case !ok:
		a.record(req.Call.Name, action, false)
		graph.EmitCustom(ctx, permissionEvent, "refused: no answer, the input has ended")
		return tool.Deny("the user did not answer (the input has ended)"), nil
	case answer == "y" || answer == "yes":
		a.record(req.Call.Name, action, true)
		graph.EmitCustom(ctx, permissionEvent, "approved")
		return tool.Allow(), nil
	default:
		a.record(req.Call.Name, action, false)
		graph.EmitCustom(ctx, permissionEvent, "refused")
		return tool.Deny("the user refused: " + action), nil
	}
}

// next returns the next line of input; ok is false at its end. It returns
// early, with ctx's error, when ctx ends first.
func (a *approver) next(ctx context.Context) (line string, ok bool, err error) {
	// The input is read ahead by a goroutine, started with the first
	// question: a read blocked on a terminal cannot be interrupted, a wait
	// on a channel can.
	a.start.Do(func() { a.answers = readLines(a.in, a.done) })
	select {
	case line, ok = <-a.answers:
		return line, ok, nil
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
}

// stop lets the reading goroutine end: at once when it waits to hand over
// a line, else when its read returns (at the end of the input, or with the
// next line).
func (a *approver) stop() { a.stopOnce.Do(func() { close(a.done) }) }

// decisions returns the decisions made so far, in order.
func (a *approver) decisions() []decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]decision(nil), a.log...)
}

func (a *approver) record(name, action string, allowed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, decision{tool: name, action: action, allowed: allowed})
}

// readLines sends the lines of r on the channel it returns, which is
// closed at the end of r, or when done is closed.
func readLines(r io.Reader, done <-chan struct{}) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			case <-done:
				return
			}
		}
	}()
	return ch
}

// maxDetailLines bounds the lines of a file's content a question shows.
const maxDetailLines = 40

// describe says in a few words what a destructive call would do, and
// returns the details a person needs to decide, each on a line of its own
// after a line break: the content write_file would write. Strings are
// quoted in full, so that nothing of a command or an edit is hidden.
func describe(call model.ToolCall) (action, details string) {
	switch call.Name {
	case "bash":
		var in shell.BashArgs
		if json.Unmarshal(call.Arguments, &in) == nil && in.Command != "" {
			if in.RunInBackground {
				return "run in the background " + strconv.Quote(in.Command), ""
			}
			return "run " + strconv.Quote(in.Command), ""
		}
	case "edit_file":
		var in workspace.EditFileArgs
		if json.Unmarshal(call.Arguments, &in) == nil && in.Path != "" {
			every := ""
			if in.ReplaceAll {
				every = "every "
			}
			return fmt.Sprintf("edit %s: replace %s%q with %q", in.Path, every, in.OldString, in.NewString), ""
		}
	case "write_file":
		var in workspace.WriteFileArgs
		if json.Unmarshal(call.Arguments, &in) == nil && in.Path != "" {
			lines := strings.Split(strings.TrimSuffix(in.Content, "\n"), "\n")
			var b strings.Builder
			for i, l := range lines {
				if i == maxDetailLines {
					fmt.Fprintf(&b, "\n| … and %d more lines", len(lines)-i)
					break
				}
				b.WriteString("\n| " + l)
			}
			return fmt.Sprintf("write %s (%d bytes)", in.Path, len(in.Content)), b.String()
		}
	}
	return "call " + call.Name + " " + string(call.Arguments), ""
}
