package temporal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/trellis-go/trellis/graph"
)

// QueryHistory returns the run's checkpoints: its argument is a
// HistoryFilter, its answer a HistoryPage. Queries add nothing to the
// workflow's history.
const QueryHistory = "trellis.history"

// Sources of checkpoints (Checkpoint.Source), as a checkpointer names them.
const (
	SourceInput  = "input"  // the run's input, before its first superstep
	SourceLoop   = "loop"   // after a superstep
	SourceFork   = "fork"   // the first checkpoint of a run started by Fork
	SourceUpdate = "update" // a fork's write as a node (ForkOptions.AsNode)
)

// ErrNoCheckpoint reports a checkpoint ID that no run of the workflow holds.
var ErrNoCheckpoint = errors.New("temporal: no such checkpoint")

// Checkpoint is where a run stood between two supersteps, as the workflow
// holds it in memory (rebuilt on replay): the state and the tasks of the
// next superstep, which is what Fork needs to go on from there.
type Checkpoint[S any] struct {
	// ID is "step-N", N the number of supersteps run before it ("step-0"
	// is the input). It is the same on every replay, and in a run forked
	// from it.
	ID string `json:"id"`
	// Parent is the ID of the checkpoint before it; empty for the input.
	Parent string `json:"parent,omitempty"`
	// Step is the superstep after which it was taken, as a checkpointer
	// counts: -1 for the input.
	Step int `json:"step"`
	// Source is SourceInput, SourceLoop, SourceFork or SourceUpdate.
	Source string `json:"source"`
	// State is the state after superstep Step.
	State S `json:"state"`
	// Next lists the nodes of the next superstep; empty once the run is over.
	Next []string `json:"next"`
	// Tasks and Joins are the next superstep's tasks (with the inputs of
	// Sends) and the joins' progress (graph.StepperState).
	Tasks []graph.StepTask[S] `json:"tasks,omitempty"`
	Joins [][]bool            `json:"joins,omitempty"`
	// Interrupts are those the run waited for (or waits for) at this
	// checkpoint: static ones, and those the next superstep's nodes raised.
	Interrupts []graph.PendingInterrupt `json:"interrupts,omitempty"`
	// Time is the workflow's time when it was taken.
	Time time.Time `json:"time"`
}

// StepperState returns what graph.Graph.RestoreStepper needs to go on from
// the checkpoint.
func (c Checkpoint[S]) StepperState() graph.StepperState[S] {
	return graph.StepperState[S]{State: c.State, Step: c.Step + 1, Tasks: c.Tasks, Joins: c.Joins}
}

// HistoryFilter is the argument of QueryHistory.
type HistoryFilter struct {
	// Limit caps the answer (all held when zero).
	Limit int `json:"limit,omitempty"`
	// Before, when set, keeps the checkpoints older than this ID.
	Before string `json:"before,omitempty"`
	// ID, when set, keeps only the checkpoint of this ID.
	ID string `json:"id,omitempty"`
}

// HistoryPage is the answer to QueryHistory.
type HistoryPage[S any] struct {
	// Checkpoints are the run's, newest first.
	Checkpoints []Checkpoint[S] `json:"checkpoints,omitempty"`
	// Previous is the ID of the run this one continued (continue-as-new),
	// which holds the older checkpoints; empty for the first run.
	Previous string `json:"previous,omitempty"`
}

// checkpointID names the checkpoint taken after n supersteps.
func checkpointID(n int) string { return "step-" + strconv.Itoa(n) }

// checkpointStep parses a checkpoint ID into its n.
func checkpointStep(id string) (int, error) {
	s, ok := strings.CutPrefix(id, "step-")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %q is not a checkpoint ID (step-N)", ErrNoCheckpoint, id)
	}
	return n, nil
}

// checkpoint records where the Stepper stands.
func (w *wfRun[S]) checkpoint(ctx workflow.Context, source string) {
	s := w.st.Save()
	c := Checkpoint[S]{
		ID: checkpointID(s.Step), Step: s.Step - 1, Source: source, State: s.State,
		Next: nodesOf(s.Tasks), Tasks: s.Tasks, Joins: s.Joins, Time: workflow.Now(ctx),
	}
	if s.Step > 0 {
		c.Parent = checkpointID(s.Step - 1)
	}
	w.cps = append(w.cps, c)
}

// writeAs ends the restored superstep as if a lone task of node had
// returned update: the state becomes it and node's routes plan the next
// superstep (Fork with ForkOptions.AsNode).
func (w *wfRun[S]) writeAs(ctx workflow.Context, node string, update *S) error {
	if update == nil {
		return fmt.Errorf("temporal: fork as node %q carries no state", node)
	}
	s := w.st.Save()
	s.Tasks = []graph.StepTask[S]{{Node: node}}
	st, err := w.r.g.RestoreStepper(s)
	if err != nil {
		return err
	}
	if err := st.Advance(context.Background(), []graph.TaskOutput[S]{{State: *update}}); err != nil {
		return err
	}
	w.st = st
	w.checkpoint(ctx, SourceUpdate)
	return nil
}

// history answers QueryHistory.
func (w *wfRun[S]) history(f HistoryFilter) (HistoryPage[S], error) {
	p := HistoryPage[S]{Previous: w.events.previous}
	before, id := -1, -1
	var err error
	if f.Before != "" {
		if before, err = checkpointStep(f.Before); err != nil {
			return p, err
		}
	}
	if f.ID != "" {
		if id, err = checkpointStep(f.ID); err != nil {
			return p, err
		}
	}
	for i := len(w.cps) - 1; i >= 0; i-- {
		c := w.cps[i]
		n := c.Step + 1
		if before >= 0 && n >= before || id >= 0 && n != id {
			continue
		}
		p.Checkpoints = append(p.Checkpoints, c)
		if f.Limit > 0 && len(p.Checkpoints) >= f.Limit {
			break
		}
	}
	return p, nil
}

// Querier is what reading a workflow's checkpoints needs of a client
// (client.Client has it).
type Querier interface {
	QueryWorkflow(ctx context.Context, workflowID, runID, queryType string, args ...any) (converter.EncodedValue, error)
}

// History returns the checkpoints of the workflow workflowID that f
// keeps, newest first, reading them from its latest run and, for older
// ones, from the runs it continued as new. A checkpoint at which a run
// continued as new is held by both runs and listed once.
func History[S any](ctx context.Context, c Querier, workflowID string, f HistoryFilter) ([]Checkpoint[S], error) {
	for _, id := range []string{f.Before, f.ID} {
		if id == "" {
			continue
		}
		if _, err := checkpointStep(id); err != nil {
			return nil, err
		}
	}
	var out []Checkpoint[S]
	seen := map[string]int{}
	run := ""
	for {
		v, err := c.QueryWorkflow(ctx, workflowID, run, QueryHistory, f)
		if err != nil {
			return out, fmt.Errorf("temporal: history of %q: %w", workflowID, err)
		}
		var p HistoryPage[S]
		if err := v.Get(&p); err != nil {
			return out, fmt.Errorf("temporal: history of %q: %w", workflowID, err)
		}
		for _, cp := range p.Checkpoints {
			if i, ok := seen[cp.ID]; ok {
				// The newer run holds it as it restored it; the older one
				// knows the interrupts it paused for there.
				if len(out[i].Interrupts) == 0 {
					out[i].Interrupts = cp.Interrupts
				}
				continue
			}
			if f.Limit > 0 && len(out) >= f.Limit {
				return out, nil
			}
			seen[cp.ID] = len(out)
			out = append(out, cp)
		}
		if p.Previous == "" || f.ID != "" && len(out) > 0 {
			return out, nil
		}
		run = p.Previous
	}
}

// GetCheckpoint returns the checkpoint id of the workflow workflowID,
// from whichever of its runs holds it, or an error matching
// ErrNoCheckpoint.
func GetCheckpoint[S any](ctx context.Context, c Querier, workflowID, id string) (Checkpoint[S], error) {
	if _, err := checkpointStep(id); err != nil {
		return Checkpoint[S]{}, err
	}
	cps, err := History[S](ctx, c, workflowID, HistoryFilter{ID: id})
	if err != nil {
		return Checkpoint[S]{}, err
	}
	if len(cps) == 0 {
		return Checkpoint[S]{}, fmt.Errorf("%w: %q of %q", ErrNoCheckpoint, id, workflowID)
	}
	return cps[0], nil
}

// ForkClient is what Fork needs of a client (client.Client has it).
type ForkClient interface {
	Querier
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// ForkOptions say where a forked run goes.
type ForkOptions[S any] struct {
	// Workflow is the name of the Runner's workflow (Runner.Name).
	Workflow string
	// Start are the new workflow's options: its ID (the new thread) and
	// task queue at least.
	Start client.StartWorkflowOptions
	// Update, when set, changes the checkpoint's state before the forked
	// run goes on. Without AsNode the next superstep reads what it
	// returns and the tasks due stay the checkpoint's (no route is
	// evaluated again).
	Update func(S) S
	// AsNode, when set, makes what Update returns (the checkpoint's state
	// without Update) count as the output of a task of node AsNode that
	// ended the checkpoint's superstep, as graph.Graph.UpdateState does:
	// the state becomes that output, and the nodes that follow AsNode
	// (its edges, conditional edges, joins) are due instead of the
	// checkpoint's. The fork then holds a second checkpoint, of Source
	// SourceUpdate, one superstep later.
	AsNode string
}

// ForkOrigin names the checkpoint a forked run started from.
type ForkOrigin struct {
	WorkflowID string `json:"workflow_id"`
	Checkpoint string `json:"checkpoint"`
	// AsNode is ForkOptions.AsNode.
	AsNode string `json:"as_node,omitempty"`
}

// Fork starts a new workflow, opts.Start.ID, that goes on from the
// checkpoint checkpointID of the workflow from (running or ended): the
// state and next tasks saved there, changed by opts.Update if set. Its
// first checkpoint is that one (same ID, Source SourceFork); the
// checkpoints before it stay with from. What the checkpoint's superstep
// did after it (tasks that finished, answers to its interrupts) is not
// carried: its tasks all run again, and a node that asked for input asks
// again. from's workflow is not changed.
func Fork[S any](ctx context.Context, c ForkClient, from, checkpointID string, opts ForkOptions[S]) (client.WorkflowRun, error) {
	cp, err := GetCheckpoint[S](ctx, c, from, checkpointID)
	if err != nil {
		return nil, err
	}
	st := cp.StepperState()
	cont := &Continuation[S]{Stepper: st, Fork: &ForkOrigin{WorkflowID: from, Checkpoint: checkpointID, AsNode: opts.AsNode}}
	switch {
	case opts.AsNode != "":
		u := st.State
		if opts.Update != nil {
			u = opts.Update(u)
		}
		cont.Update = &u
	case opts.Update != nil:
		cont.Stepper.State = opts.Update(st.State)
	}
	run, err := c.ExecuteWorkflow(ctx, opts.Start, opts.Workflow, cont.Stepper.State, cont)
	if err != nil {
		return nil, fmt.Errorf("temporal: fork %q at %s: %w", from, checkpointID, err)
	}
	return run, nil
}
