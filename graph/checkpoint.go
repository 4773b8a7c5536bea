package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-go/trellis/state"
)

// Durability says when a run's checkpoints reach the saver.
type Durability int

const (
	// DurabilitySync writes each checkpoint before the next superstep starts,
	// and, in supersteps of several tasks, each task's output as soon as the
	// task finishes. A crash loses at most the tasks that were running. This
	// is the default.
	DurabilitySync Durability = iota
	// DurabilityAsync writes in the background, in order, while the run goes
	// on; the run waits for the writes before it returns. A crash may lose
	// the last few supersteps. A run's first checkpoint (its input, or the
	// copy a replay starts from) is written before any node runs, so that
	// a run the store refuses (ErrThreadBusy) runs nothing.
	DurabilityAsync
	// DurabilityExit writes once, when the run ends, is interrupted or fails:
	// the run's last checkpoint, whose parent is the checkpoint the run
	// started from (the others are never stored). A crash loses the whole
	// run.
	DurabilityExit
)

// String returns the name of the mode.
func (d Durability) String() string {
	switch d {
	case DurabilitySync:
		return "sync"
	case DurabilityAsync:
		return "async"
	case DurabilityExit:
		return "exit"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// The payload of a checkpoint: the state after a superstep and what the next
// superstep will run.
type snapshot[S any] struct {
	Format     int                `json:"format"`
	State      S                  `json:"state"`
	Tasks      []taskRef[S]       `json:"tasks,omitempty"`
	Joins      [][]bool           `json:"joins,omitempty"`
	Interrupts []PendingInterrupt `json:"interrupts,omitempty"`
	// Branch is the ID of the fork checkpoint that began the checkpoint's
	// branch of the thread, empty on the thread's first.
	Branch string `json:"branch,omitempty"`
}

const snapshotFormat = 1

type taskRef[S any] struct {
	ID    string `json:"id"`
	Node  string `json:"node"`
	Input *S     `json:"input,omitempty"`
}

// The payload of a pending write: what one task of a superstep produced.
type taskRecord[S any] struct {
	Node       string                     `json:"node"`
	Output     *S                         `json:"output,omitempty"`
	Goto       []string                   `json:"goto,omitempty"`
	Sends      []taskRef[S]               `json:"sends,omitempty"`
	Interrupts []PendingInterrupt         `json:"interrupts,omitempty"`
	Resume     map[string]json.RawMessage `json:"resume,omitempty"` // as JSON text, so that values keep their precision
}

// finished reports whether rec (which may be nil) records a task that
// returned: its output, not an interrupt.
func (rec *taskRecord[S]) finished() bool {
	return rec != nil && rec.Output != nil && len(rec.Interrupts) == 0
}

// checkpointer writes one run's checkpoints.
type checkpointer[S any] struct {
	saver      state.Saver
	ser        state.Serializer
	thread, ns string
	durability Durability
	last       string // ID of the latest checkpoint written or loaded

	// The thread's latest checkpoint in ns as the run last saw it (empty:
	// none), when known: with a state.ConditionalSaver, each checkpoint is
	// stored only if the thread's latest is still head, so that a run in
	// another process that wrote to the thread meanwhile is not hidden.
	head      string
	headKnown bool
	// syncNext makes the next put store at once even with async writes:
	// set for a run's first write, which nothing is queued before.
	syncNext bool

	// Async writes.
	queue chan func() error
	wg    sync.WaitGroup
	mu    sync.Mutex
	err   error
	// Exit-mode writes held until the end.
	held      *state.Checkpoint
	heldWrite []state.PendingWrite
	heldFor   string // the checkpoint the held writes belong to
}

func (c *checkpointer[S]) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

func (c *checkpointer[S]) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *checkpointer[S]) startAsync() {
	c.queue = make(chan func() error, 64)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for w := range c.queue {
			if err := writeRecovering(w); err != nil {
				c.fail(err)
			}
		}
	}()
}

// writeRecovering runs w, turning a panic (of the saver, say) into an
// error: on the writer's goroutine it would end the process.
func writeRecovering(w func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("graph: writing a checkpoint panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return w()
}

// metaBranch is the checkpoint metadata key of the branch a checkpoint
// belongs to (snapshot.Branch), when it is not the thread's first.
const metaBranch = "trellis.branch"

// followLatest makes the thread's latest checkpoint in c's namespace, if
// there is one, the parent of the next checkpoint c writes, and returns
// the branch it belongs to.
func (c *checkpointer[S]) followLatest(ctx context.Context) (branch string, err error) {
	tup, err := c.saver.Get(ctx, c.thread, c.ns, "")
	switch {
	case err == nil:
		c.last = tup.Checkpoint.ID
		c.sawHead(tup.Checkpoint.ID)
		return tup.Checkpoint.Metadata[metaBranch], nil
	case !errors.Is(err, state.ErrNotFound):
		return "", fmt.Errorf("graph: thread %q: reading the latest checkpoint: %w", c.thread, err)
	}
	c.sawHead("")
	return "", nil
}

// checkLatest returns nil if the thread's latest checkpoint in c's
// namespace, as c last read it (read now if c never did), is want (none,
// when empty); otherwise an error matching ErrThreadBusy and
// state.ErrNotLatest that names both (IfLatest).
func (c *checkpointer[S]) checkLatest(ctx context.Context, want string) error {
	if !c.headKnown {
		tup, err := c.saver.Get(ctx, c.thread, c.ns, "")
		switch {
		case err == nil:
			c.sawHead(tup.Checkpoint.ID)
		case errors.Is(err, state.ErrNotFound):
			c.sawHead("")
		default:
			return fmt.Errorf("graph: thread %q: reading the latest checkpoint: %w", c.thread, err)
		}
	}
	if c.head == want {
		return nil
	}
	return fmt.Errorf("graph: thread %q: the run or update was made from the thread as it was at checkpoint %s, but another "+
		"writer (a run or an UpdateState) has moved it on since; nothing was run or stored: %w (%w)",
		c.thread, idOrNone(want), ErrThreadBusy, state.NotLatest(c.head, want))
}

func idOrNone(id string) string {
	if id == "" {
		return "none (a new thread)"
	}
	return strconv.Quote(id)
}

// sawHead records id (empty: none) as the thread's latest checkpoint in
// c's namespace.
func (c *checkpointer[S]) sawHead(id string) { c.head, c.headKnown = id, true }

// store puts cp, only if the thread's latest checkpoint is still expect
// when known and the saver can check it.
func (c *checkpointer[S]) store(ctx context.Context, cp state.Checkpoint, expect string, known bool) error {
	cs, ok := c.saver.(state.ConditionalSaver)
	if !ok || !known {
		if err := c.saver.Put(ctx, cp); err != nil {
			return c.wrap(cp.ID, "saving checkpoint", err)
		}
		return nil
	}
	err := cs.PutIfLatest(ctx, cp, expect)
	switch {
	case errors.Is(err, state.ErrNotLatest):
		return fmt.Errorf("graph: thread %q: checkpoint %q: not saved: another writer (a run or an UpdateState, in this "+
			"process or another) stored a checkpoint on the thread after this run read it: %w (%w)", c.thread, cp.ID, ErrThreadBusy, err)
	case err != nil:
		return c.wrap(cp.ID, "saving checkpoint", err)
	}
	return nil
}

// do runs a write according to the durability mode.
func (c *checkpointer[S]) do(w func() error) error {
	if c.queue != nil {
		c.queue <- w
		return c.failed()
	}
	return w()
}

// flush ends async writing and writes what exit mode held back. It returns
// the first write error.
func (c *checkpointer[S]) flush(ctx context.Context) error {
	if c.queue != nil {
		close(c.queue)
		c.wg.Wait()
		c.queue = nil
	}
	if c.held != nil {
		cp := *c.held
		c.held = nil
		ctx := context.WithoutCancel(ctx)
		if err := c.store(ctx, cp, c.head, c.headKnown); err != nil {
			c.fail(err)
		} else if len(c.heldWrite) > 0 {
			if err := c.saver.PutWrites(ctx, c.thread, c.ns, cp.ID, c.heldWrite); err != nil {
				c.fail(c.wrap(cp.ID, "saving pending writes", err))
			}
		}
		c.heldWrite = nil
	}
	if len(c.heldWrite) > 0 {
		// A resumed run that paused before it finished a superstep: its
		// tasks' writes belong to the checkpoint it resumed from.
		if err := c.saver.PutWrites(context.WithoutCancel(ctx), c.thread, c.ns, c.heldFor, c.heldWrite); err != nil {
			c.fail(c.wrap(c.heldFor, "saving pending writes", err))
		}
		c.heldWrite = nil
	}
	return c.failed()
}

func (c *checkpointer[S]) wrap(id, what string, err error) error {
	return fmt.Errorf("graph: thread %q: checkpoint %q: %s: %w", c.thread, id, what, err)
}

// newID returns a fresh, time-ordered checkpoint ID.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// put stores the snapshot as checkpoint id, following the last one
// stored.
func (c *checkpointer[S]) put(ctx context.Context, id string, step int, source string, snap *snapshot[S]) error {
	snap.Format = snapshotFormat
	payload, err := marshalAt(c.ser, snap, state.Binding{ThreadID: c.thread, Namespace: c.ns, CheckpointID: id})
	if err != nil {
		return fmt.Errorf("graph: thread %q: encoding the state after superstep %d: %w", c.thread, step, err)
	}
	parent := c.last
	if c.held != nil {
		// Exit mode stores only the run's last checkpoint: the ones before
		// it, held in memory and replaced, are never stored, so each names
		// as its parent the one the first held named — the checkpoint the
		// run started from, which is stored — and History reads as one
		// chain.
		parent = c.held.ParentID
	}
	cp := state.Checkpoint{
		ThreadID: c.thread, Namespace: c.ns, ID: id, ParentID: parent,
		Step: step, Source: source, CreatedAt: time.Now().UTC(), Payload: payload,
	}
	if snap.Branch != "" {
		// Also readable without decoding the payload (see followLatest).
		cp.Metadata = map[string]string{metaBranch: snap.Branch}
	}
	c.last = cp.ID
	if c.durability == DurabilityExit {
		// Nothing is stored before flush: the thread's latest is still
		// expected to be head then.
		c.held, c.heldWrite = &cp, nil
		return nil
	}
	expect, known := c.head, c.headKnown
	c.head = cp.ID
	if c.syncNext {
		c.syncNext = false
		return c.store(context.WithoutCancel(ctx), cp, expect, known)
	}
	return c.do(func() error { return c.store(context.WithoutCancel(ctx), cp, expect, known) })
}

// write stores one task's record against the checkpoint cpID.
func (c *checkpointer[S]) write(ctx context.Context, cpID, taskID string, rec *taskRecord[S]) error {
	payload, err := marshalAt(c.ser, rec, state.Binding{ThreadID: c.thread, Namespace: c.ns, CheckpointID: cpID, Write: true, TaskID: taskID})
	if err != nil {
		return fmt.Errorf("graph: thread %q: encoding the output of node %q: %w", c.thread, rec.Node, err)
	}
	w := state.PendingWrite{TaskID: taskID, Node: rec.Node, Payload: payload}
	if c.durability == DurabilityExit {
		c.mu.Lock()
		c.heldWrite, c.heldFor = append(c.heldWrite, w), cpID
		c.mu.Unlock()
		return nil
	}
	return c.do(func() error {
		if err := c.saver.PutWrites(context.WithoutCancel(ctx), c.thread, c.ns, cpID, []state.PendingWrite{w}); err != nil {
			return c.wrap(cpID, "saving the output of node "+rec.Node, err)
		}
		return nil
	})
}

// replays reports whether a run or an update that loaded checkpoint id,
// named by the caller (from, empty when the caller named none), starts a
// new branch from it: from names a checkpoint that is not the thread's
// latest. The tasks of such a checkpoint recorded history; naming the
// latest is a resume.
func (c *checkpointer[S]) replays(ctx context.Context, from, id string) bool {
	if from == "" {
		return false
	}
	latest, err := c.saver.Get(ctx, c.thread, c.ns, "")
	if err != nil {
		return true
	}
	c.sawHead(latest.Checkpoint.ID)
	return latest.Checkpoint.ID != id
}

// load reads a checkpoint (the latest if id is empty) and its pending writes.
func (c *checkpointer[S]) load(ctx context.Context, id string) (*state.Tuple, *snapshot[S], map[string]*taskRecord[S], error) {
	tup, err := c.saver.Get(ctx, c.thread, c.ns, id)
	if err == nil && id == "" {
		c.sawHead(tup.Checkpoint.ID)
	}
	if err != nil {
		if id == "" {
			return nil, nil, nil, fmt.Errorf("graph: thread %q: %w", c.thread, err)
		}
		return nil, nil, nil, fmt.Errorf("graph: thread %q: checkpoint %q: %w", c.thread, id, err)
	}
	snap, recs, err := decodeTuple[S](c.ser, &tup)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("graph: thread %q: %w", c.thread, err)
	}
	return &tup, snap, recs, nil
}

// ErrCorruptCheckpoint is matched by errors about checkpoints that cannot be
// decoded.
var ErrCorruptCheckpoint = errors.New("corrupt checkpoint")

func decodeTuple[S any](ser state.Serializer, tup *state.Tuple) (*snapshot[S], map[string]*taskRecord[S], error) {
	snap := new(snapshot[S])
	if err := unmarshalAt(ser, tup.Checkpoint.Payload, state.CheckpointBinding(&tup.Checkpoint), snap); err != nil {
		return nil, nil, fmt.Errorf("checkpoint %q: %w: %w", tup.Checkpoint.ID, ErrCorruptCheckpoint, err)
	}
	if snap.Format != snapshotFormat {
		return nil, nil, fmt.Errorf("checkpoint %q: %w: unknown payload format %d", tup.Checkpoint.ID, ErrCorruptCheckpoint, snap.Format)
	}
	recs := make(map[string]*taskRecord[S], len(tup.Writes))
	for _, w := range tup.Writes {
		rec := new(taskRecord[S])
		if err := unmarshalAt(ser, w.Payload, state.WriteBinding(&tup.Checkpoint, w.TaskID), rec); err != nil {
			return nil, nil, fmt.Errorf("checkpoint %q: pending write of task %q: %w: %w", tup.Checkpoint.ID, w.TaskID, ErrCorruptCheckpoint, err)
		}
		recs[w.TaskID] = rec
	}
	return snap, recs, nil
}

// marshalAt encodes v for the place at, bound to it when ser can bind
// (state.BoundSerializer).
func marshalAt(ser state.Serializer, v any, at state.Binding) ([]byte, error) {
	if bs, ok := ser.(state.BoundSerializer); ok {
		return bs.MarshalBound(v, at)
	}
	return ser.Marshal(v)
}

// unmarshalAt decodes data read from the place at, checking that it was
// bound to it when ser can bind (state.BoundSerializer).
func unmarshalAt(ser state.Serializer, data []byte, at state.Binding, v any) error {
	if bs, ok := ser.(state.BoundSerializer); ok {
		return bs.UnmarshalBound(data, at, v)
	}
	return ser.Unmarshal(data, v)
}
