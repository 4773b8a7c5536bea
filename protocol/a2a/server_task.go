package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
)

// taskRec is a task the server remembers. Its fields are guarded by
// Server.mu.
type taskRec struct {
	owner         string // whose the task is (WithOwner)
	id, contextID string
	status        TaskStatus
	artifacts     []Artifact
	history       []Message
	updated       time.Time

	running      bool
	seq          uint64             // the task's place in the order tasks were made
	at           [2]int             // its place in Server.idle and in its owner's idleQueue, while it does not run
	waiting      bool               // in Server.waiting: it does not run and waits for input
	cancel       context.CancelFunc // cancels the current run
	done         chan struct{}      // closed when the current run ends
	cancelReason string             // why the current run was canceled
	subs         map[*subscriber]struct{}
}

// snapshot returns the task as a client sees it, with at most
// historyLength messages of its history (all when nil). The caller holds
// Server.mu.
func (t *taskRec) snapshot(historyLength *int) *Task {
	out := &Task{ID: t.id, ContextID: t.contextID, Status: t.status, Artifacts: slices.Clone(t.artifacts)}
	h := t.history
	if historyLength != nil {
		h = h[len(h)-min(max(*historyLength, 0), len(h)):]
	}
	out.History = slices.Clone(h)
	return out
}

// maxQueued is the most events a stream's subscriber holds for a client
// that reads slower than the agent writes (a long run's token deltas).
const maxQueued = 1024

// subscriber receives the events of a task for one stream. A slow client
// never slows the agent: its events queue up, and when more than maxQueued
// wait, the queue is dropped and the stream ends, so that a client that
// stopped reading holds no memory; the client then finds the task's state
// with GetTask, or follows it again with SubscribeToTask.
type subscriber struct {
	mu      sync.Mutex
	queue   []Event
	last    bool          // no events will follow the queue
	dropped bool          // the queue overflowed: the stream ends
	signal  chan struct{} // has a value when the queue changed
}

func newSubscriber() *subscriber { return &subscriber{signal: make(chan struct{}, 1)} }

func (sub *subscriber) push(ev Event, last bool) {
	sub.mu.Lock()
	switch {
	case sub.dropped:
	case len(sub.queue) >= maxQueued:
		sub.queue, sub.last, sub.dropped = nil, true, true
	default:
		sub.queue = append(sub.queue, ev)
		sub.last = sub.last || last
	}
	sub.mu.Unlock()
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

func (sub *subscriber) take() ([]Event, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	q := sub.queue
	sub.queue = nil
	return q, sub.last
}

// publish sends ev to the task's subscribers; last ends their streams. The
// caller holds s.mu.
func (t *taskRec) publish(ev Event, last bool) {
	for sub := range t.subs {
		sub.push(ev, last)
	}
	if last {
		t.subs = nil
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// sendParamsIn are the params of SendMessage and message/send.
type sendParamsIn struct {
	Message       *Message `json:"message"`
	Configuration *struct {
		ReturnImmediately          bool            `json:"returnImmediately"`
		Blocking                   *bool           `json:"blocking"` // 0.3
		HistoryLength              *int            `json:"historyLength"`
		TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig"`
		PushNotificationConfig     json.RawMessage `json:"pushNotificationConfig"` // 0.3
	} `json:"configuration"`
}

func (s *Server) send(c *call, stream bool) {
	var p sendParamsIn
	if f := c.decodeParams(&p); f != nil {
		c.fail(f)
		return
	}
	if f := checkMessage(p.Message); f != nil {
		c.fail(f)
		return
	}
	blocking, historyLength := true, (*int)(nil)
	if cfg := p.Configuration; cfg != nil {
		if isSet(cfg.TaskPushNotificationConfig) || isSet(cfg.PushNotificationConfig) {
			c.fail(failf(RPCPushNotificationNotSupport, "this agent does not send push notifications: leave out configuration.taskPushNotificationConfig"))
			return
		}
		blocking = !cfg.ReturnImmediately
		if cfg.Blocking != nil {
			blocking = *cfg.Blocking
		}
		historyLength = cfg.HistoryLength
	}
	if s.runs != nil {
		if s.isClosed() {
			c.fail(failf(RPCInternalError, "the server is shutting down"))
			return
		}
		s.runsSend(c, stream, blocking, *p.Message, historyLength)
		return
	}
	var sub *subscriber
	if stream {
		sub = newSubscriber()
	}
	t, first, done, f := s.submit(c.owner, *p.Message, sub)
	if f != nil {
		c.fail(f)
		return
	}
	if stream {
		s.streamEvents(c, t, sub, first)
		return
	}
	if blocking {
		// Close cancels the run, which then ends: done covers it.
		select {
		case <-done:
		case <-c.r.Context().Done():
			// The client left before the answer, without the task's ID
			// to ask for it later: the run would be wasted.
			s.mu.Lock()
			if t.running && t.done == done {
				t.cancelReason = "the client that sent the message left before the answer"
				t.cancel()
			}
			s.mu.Unlock()
			return
		}
	}
	s.mu.Lock()
	snap := t.snapshot(historyLength)
	s.mu.Unlock()
	if c.legacy {
		c.reply(toLegacyTask(snap))
		return
	}
	c.reply(Event{Task: snap})
}

func isSet(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// checkMessage checks a client's message, naming what is wrong.
func checkMessage(m *Message) *rpcFailure {
	switch {
	case m == nil:
		return failf(RPCInvalidParams, "params.message is required")
	case m.Role != "" && m.Role != RoleUser:
		return failf(RPCInvalidParams, "params.message.role must be %s (0.3: user), got %q", RoleUser, m.Role)
	case len(m.Parts) == 0:
		return failf(RPCInvalidParams, "params.message.parts: a message needs at least one part")
	}
	for i, p := range m.Parts {
		if p.Kind == "" {
			return failf(RPCInvalidParams, "params.message.parts[%d] holds no text, data, url or raw content", i)
		}
	}
	return nil
}

// submit starts a task of owner for the message, or continues the task it
// names, which must be owner's and wait for input. It returns the task, its first event for a
// stream (the task as submitted), and the channel closed when its run
// ends. sub, when not nil, receives the task's events from the start.
func (s *Server) submit(owner string, m Message, sub *subscriber) (*taskRec, Event, <-chan struct{}, *rpcFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, Event{}, nil, failf(RPCInternalError, "the server is shutting down")
	}
	var t *taskRec
	if m.TaskID != "" {
		t = s.task(owner, m.TaskID)
		switch {
		case t == nil:
			return nil, Event{}, nil, failf(RPCTaskNotFound, "task %q not found", m.TaskID)
		case m.ContextID != "" && m.ContextID != t.contextID:
			return nil, Event{}, nil, failf(RPCInvalidParams, "params.message.contextId %q does not match the context %q of task %q", m.ContextID, t.contextID, t.id)
		case t.status.State.Terminal():
			return nil, Event{}, nil, failf(RPCUnsupportedOperation, "task %q is %s and takes no more messages: send the message without taskId, with contextId %q, to go on in the conversation", t.id, t.status.State.short(), t.contextID)
		case t.running:
			return nil, Event{}, nil, failf(RPCUnsupportedOperation, "task %q is still running: wait for it (GetTask) before sending it a message", t.id)
		}
	} else {
		ctxID := m.ContextID
		if ctxID == "" {
			ctxID = newID()
		}
		var f *rpcFailure
		if t, f = s.admit(owner, ctxID); f != nil {
			return nil, Event{}, nil, f
		}
	}
	m.TaskID, m.ContextID, m.Role = t.id, t.contextID, RoleUser
	if m.MessageID == "" {
		m.MessageID = newID()
	}
	t.history = append(t.history, m)
	t.status = TaskStatus{State: StateSubmitted, Timestamp: nowUTC()}
	t.updated = t.status.Timestamp
	s.markRunning(t)
	t.cancelReason = ""
	t.done = make(chan struct{})
	ctx, cancel := context.WithCancel(s.ctx)
	t.cancel = cancel
	var first Event
	if sub != nil {
		if t.subs == nil {
			t.subs = map[*subscriber]struct{}{}
		}
		t.subs[sub] = struct{}{}
		first = Event{Task: t.snapshot(nil)}
	}
	conv := s.conversation(t.owner, t.contextID)
	s.wg.Add(1)
	go s.run(ctx, cancel, t, conv, userMessage(m), sub != nil)
	return t, first, t.done, nil
}

// admit makes room for a new task of owner in the context ctxID and
// records it, running. The caller holds s.mu.
func (s *Server) admit(owner, ctxID string) (*taskRec, *rpcFailure) {
	// Make room first: a task that runs is never forgotten, so a
	// server whose every task runs takes no more (each would hold a
	// goroutine and its message until the agent got to it).
	// Each owner's tasks are bounded on their own, so that one owner
	// cannot take the room of all; all owners' together, too.
	if !s.evictTasks(owner, false, s.cfg.maxTasks-1) {
		f := failf(RPCInternalError, "the agent is busy: %d tasks are running or waiting to run for this owner; try again later", s.owned[owner])
		f.status = http.StatusServiceUnavailable
		return nil, f
	}
	if !s.evictTasks("", true, s.cfg.maxTotalTasks-1) {
		f := failf(RPCInternalError, "the agent is busy: %d tasks are running or waiting to run; try again later", len(s.tasks))
		f.status = http.StatusServiceUnavailable
		return nil, f
	}
	s.taskSeq++
	t := &taskRec{owner: owner, id: newID(), contextID: ctxID, running: true, seq: s.taskSeq}
	s.supersede(owner, ctxID, t.id)
	s.tasks[t.id] = t
	if s.owned == nil {
		s.owned, s.ownerIdle = map[string]int{}, map[string]*idleQueue{}
	}
	s.owned[owner]++
	return t, nil
}

// markRunning marks t running: it leaves the queues of the tasks that may
// be forgotten. The caller holds s.mu.
func (s *Server) markRunning(t *taskRec) {
	if !t.running {
		s.idle.remove(t)
		s.ownerIdle[t.owner].remove(t)
		s.setWaiting(t, false)
	}
	t.running = true
}

// markIdle marks t as no longer running: it joins, by its age, the
// queues of the tasks that may be forgotten. The caller holds s.mu.
func (s *Server) markIdle(t *taskRec) {
	if !t.running {
		return
	}
	t.running = false
	s.idle.push(t)
	q := s.ownerIdle[t.owner]
	if q == nil {
		q = &idleQueue{at: 1}
		s.ownerIdle[t.owner] = q
	}
	q.push(t)
	s.setWaiting(t, t.status.State.Interrupted())
}

// setWaiting puts t in the tasks of its context that wait for input, or
// takes it out. The caller holds s.mu.
func (s *Server) setWaiting(t *taskRec, waiting bool) {
	if t.waiting == waiting {
		return
	}
	t.waiting = waiting
	k := convKey{t.owner, t.contextID}
	if waiting {
		if s.waiting == nil {
			s.waiting = map[convKey][]*taskRec{}
		}
		s.waiting[k] = append(s.waiting[k], t)
		return
	}
	ts := slices.DeleteFunc(s.waiting[k], func(o *taskRec) bool { return o == t })
	if len(ts) == 0 {
		delete(s.waiting, k)
	} else {
		s.waiting[k] = ts
	}
}

// forget drops t, which does not run. The caller holds s.mu.
func (s *Server) forget(t *taskRec) {
	s.idle.remove(t)
	s.ownerIdle[t.owner].remove(t)
	if s.owned[t.owner]--; s.owned[t.owner] == 0 {
		delete(s.owned, t.owner)
		delete(s.ownerIdle, t.owner)
	}
	delete(s.tasks, t.id)
	s.setWaiting(t, false)
}

// supersede ends the tasks of owner's context that wait for input when a
// new task starts in it: with a checkpointer, the new task's message
// answers their question (the context's thread resumes with it); without
// one, no task waits. The caller holds s.mu.
func (s *Server) supersede(owner, contextID, by string) {
	// Ending a task takes it out of the waiting ones: go over a copy.
	for _, old := range slices.Clone(s.waiting[convKey{owner, contextID}]) {
		m := s.agentMessage(old, []Part{TextPart("The task was canceled: a later message of its context, in task " + by + ", answered its question.")})
		old.history = append(old.history, m)
		s.setStatus(old, StateCanceled, &m, true)
	}
}

// task returns owner's task with the given ID, or nil. A task of another
// owner is not found, exactly as one that does not exist, so that nobody
// learns of others' tasks. The caller holds s.mu.
func (s *Server) task(owner, id string) *taskRec {
	if t := s.tasks[id]; t != nil && t.owner == owner {
		return t
	}
	return nil
}

// evictTasks forgets the oldest tasks of owner (of all owners, when
// everyone) that are not running while there are more than n of them, and
// reports whether that was enough. The queues of the tasks that do not run
// give the oldest at once, so that a new task costs no look at the others.
// The caller holds s.mu.
func (s *Server) evictTasks(owner string, everyone bool, n int) bool {
	for {
		count, q := s.owned[owner], s.ownerIdle[owner]
		if everyone {
			count, q = len(s.tasks), &s.idle
		}
		if count <= n {
			return true
		}
		if q == nil || q.oldest() == nil {
			return false // every task is running
		}
		s.forget(q.oldest())
	}
}

// run runs the agent for a task, one turn of its conversation. With deltas
// (a stream asked for the task), the models stream their text.
func (s *Server) run(ctx context.Context, cancel context.CancelFunc, t *taskRec, conv *conversation, user model.Message, deltas bool) {
	defer s.wg.Done()
	defer s.release(conv)
	defer cancel()
	// One task at a time runs the agent in a conversation.
	select {
	case conv.lock <- struct{}{}:
	case <-ctx.Done():
		s.end(ctx, t, conv, turnResult{err: ctx.Err()}, false)
		return
	}
	defer func() { <-conv.lock }()
	// A task of the context canceled while it waited for input left its
	// question in the thread: this task's message starts a new turn.
	if err := s.dropCanceledQuestion(ctx, conv); err != nil {
		s.end(ctx, t, conv, turnResult{err: err}, true)
		return
	}
	// A task of the context may have paused for input while this one
	// waited for the conversation: this task's message answers it now.
	s.mu.Lock()
	s.supersede(t.owner, t.contextID, t.id)
	s.mu.Unlock()
	s.status(t, StateWorking, nil, true)
	res := s.agent.turn(ctx, conv, user, deltas, func(ev graph.Event) { s.onEvent(t, ev) })
	if s.end(ctx, t, conv, res, true) {
		// Canceled, the run may have left a question pending (it paused
		// as the cancel came, or the cancel came before its resume took
		// effect): drop it before the next task gets the conversation. The
		// task's context has ended; the server's has not, unless it closes.
		_ = s.dropCanceledQuestion(s.ctx, conv)
	}
}

// end records how the task's run ended, in one step under s.mu, so that a
// CancelTask finds either the run still going, and its cancel takes effect,
// or the run's final state, and its cancel comes too late ("task not
// cancelable"). A run whose cancel took effect ends canceled whatever it
// returned: an answer that came after the cancel is dropped. held says
// that the run held the conversation; then, for a checkpointed agent, a
// canceled run marks the conversation's pending question, if any, to be
// dropped, and end reports that it did.
func (s *Server) end(ctx context.Context, t *taskRec, conv *conversation, res turnResult, held bool) (drop bool) {
	var failText string
	if res.err != nil {
		failText = "The agent failed: " + s.cfg.errorText(res.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		state TaskState
		text  string
	)
	switch {
	// Every cancel of a run's context (CancelTask, Close, a blocking
	// client that left) sets cancelReason first, under s.mu.
	case t.cancelReason != "" || ctx.Err() != nil:
		state, text = StateCanceled, canceledText(t)
		if held && s.agent.checkpointed() {
			conv.dropQuestion, drop = true, true
		}
	case res.err == nil && len(res.interrupts) == 0:
		if !s.agent.checkpointed() {
			conv.history = res.history // the run holds conv.lock
		}
		parts := a2aParts(res.answer)
		art := Artifact{ArtifactID: "answer", Name: "answer", Parts: parts}
		t.artifacts = append(t.artifacts, art)
		t.publish(Event{ArtifactUpdate: &ArtifactUpdate{TaskID: t.id, ContextID: t.contextID, Artifact: art, LastChunk: true}}, false)
		t.history = append(t.history, s.agentMessage(t, parts))
		state = StateCompleted
	case res.err != nil:
		state, text = StateFailed, failText
	case !s.agent.checkpointed():
		state, text = StateFailed, "The agent asked for input ("+questionText(res.interrupts)+"), but it runs without a checkpointer, so its run cannot be resumed."
	default:
		state, text = StateInputRequired, questionText(res.interrupts)
	}
	var msg *Message
	if text != "" {
		m := s.agentMessage(t, []Part{TextPart(text)})
		t.history = append(t.history, m)
		msg = &m
	}
	s.setStatus(t, state, msg, true)
	s.markIdle(t)
	close(t.done)
	return drop
}

// dropCanceledQuestion drops the question a canceled task left pending in
// the conversation's thread (conv.dropQuestion), if any. The caller holds
// conv.lock, so no run of the thread goes on meanwhile. On failure the
// mark stays, and the next holder tries again.
func (s *Server) dropCanceledQuestion(ctx context.Context, conv *conversation) error {
	s.mu.Lock()
	pending := conv.dropQuestion
	conv.dropQuestion = false
	s.mu.Unlock()
	if !pending {
		return nil
	}
	err := s.agent.dropQuestion(ctx, conv)
	if err != nil {
		s.mu.Lock()
		conv.dropQuestion = true
		s.mu.Unlock()
	}
	return err
}

// canceledText is the message of a canceled task. The caller holds s.mu.
func canceledText(t *taskRec) string {
	if t.cancelReason != "" {
		return "The task was canceled: " + t.cancelReason + "."
	}
	return "The task was canceled."
}

// agentMessage returns a message of the agent in the task. The caller holds
// s.mu or owns t.
func (s *Server) agentMessage(t *taskRec, parts []Part) Message {
	return Message{MessageID: newID(), ContextID: t.contextID, TaskID: t.id, Role: RoleAgent, Parts: parts}
}

// status records and publishes a new status of the task.
func (s *Server) status(t *taskRec, state TaskState, msg *Message, store bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStatus(t, state, msg, store)
}

// setStatus is status with s.mu held. A status that ends the run ends the
// streams.
func (s *Server) setStatus(t *taskRec, state TaskState, msg *Message, store bool) {
	st := TaskStatus{State: state, Message: msg, Timestamp: nowUTC()}
	if store {
		t.status = st
		t.updated = st.Timestamp
		if !t.running {
			s.setWaiting(t, state.Interrupted())
		}
	}
	t.publish(Event{StatusUpdate: &StatusUpdate{TaskID: t.id, ContextID: t.contextID, Status: st}}, !state.Active())
}

// onEvent turns an event of the agent's run into a status update: a model's
// streamed text as a delta, a tool call starting as a note on progress.
// Events of nested agents (handoffs) are left out.
func (s *Server) onEvent(t *taskRec, ev graph.Event) {
	if len(ev.Path) > 0 {
		return
	}
	switch ev.Kind {
	case nodes.KindModelDelta:
		chunk, ok := ev.Payload.(model.Chunk)
		if !ok || chunk.Text == "" {
			return
		}
		m := s.agentMessage(t, []Part{TextPart(chunk.Text)})
		m.Metadata = map[string]any{MetaDelta: true}
		s.status(t, StateWorking, &m, false)
	case nodes.KindToolStart:
		e, ok := ev.Payload.(executor.Event)
		if !ok {
			return
		}
		name := e.Title
		if name == "" {
			name = e.Call.Name
		}
		m := s.agentMessage(t, []Part{TextPart("Calling " + name + ".")})
		s.status(t, StateWorking, &m, true)
	}
}

// streamEvents writes a task's events to the call as server-sent events,
// first the task as it was when the stream began, until the run ends (the
// task ends or waits for input), the client leaves or the server closes.
func (s *Server) streamEvents(c *call, t *taskRec, sub *subscriber, first Event) {
	defer func() {
		s.mu.Lock()
		delete(t.subs, sub)
		s.mu.Unlock()
	}()
	write, keepAliveComment := c.startEvents()
	if !write(first) {
		return
	}
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-sub.signal:
			evs, last := sub.take()
			for _, ev := range evs {
				if !write(ev) {
					return
				}
			}
			if last {
				return
			}
		case <-keepAlive.C:
			if !keepAliveComment() {
				return
			}
		case <-c.r.Context().Done():
			return
		case <-s.done:
			// Close cancels the runs; write what they published on the
			// way out, then end.
			s.wg.Wait()
			evs, _ := sub.take()
			for _, ev := range evs {
				if !write(ev) {
					return
				}
			}
			return
		}
	}
}

// taskIDParams are the params of GetTask, CancelTask and SubscribeToTask.
type taskIDParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

func (c *call) taskID() (taskIDParams, *rpcFailure) {
	var p taskIDParams
	if f := c.decodeParams(&p); f != nil {
		return p, f
	}
	if p.ID == "" {
		return p, failf(RPCInvalidParams, "params.id is required: the ID of the task")
	}
	return p, nil
}

func (s *Server) getTask(c *call) {
	p, f := c.taskID()
	if f != nil {
		c.fail(f)
		return
	}
	if s.runs != nil {
		s.runsGetTask(c, p)
		return
	}
	s.mu.Lock()
	t := s.task(c.owner, p.ID)
	var snap *Task
	if t != nil {
		snap = t.snapshot(p.HistoryLength)
	}
	s.mu.Unlock()
	if t == nil {
		c.fail(failf(RPCTaskNotFound, "task %q not found", p.ID))
		return
	}
	c.reply(c.task(snap))
}

func (s *Server) cancelTask(c *call) {
	p, f := c.taskID()
	if f != nil {
		c.fail(f)
		return
	}
	if s.runs != nil {
		s.runsCancelTask(c, p)
		return
	}
	s.mu.Lock()
	t := s.task(c.owner, p.ID)
	switch {
	case t == nil:
		s.mu.Unlock()
		c.fail(failf(RPCTaskNotFound, "task %q not found", p.ID))
		return
	case t.status.State.Terminal():
		state := t.status.State.short()
		s.mu.Unlock()
		c.fail(failf(RPCTaskNotCancelable, "task %q is already %s", p.ID, state))
		return
	case t.running:
		if t.cancelReason == "" {
			t.cancelReason = "the client canceled it"
		}
		done := t.done
		t.cancel()
		s.mu.Unlock()
		select {
		case <-done:
		case <-c.r.Context().Done():
			return
		}
	default: // waiting for input: nothing runs
		m := s.agentMessage(t, []Part{TextPart("The task was canceled: the client canceled it.")})
		t.history = append(t.history, m)
		s.setStatus(t, StateCanceled, &m, true)
		// The question stays pending in the context's thread until it is
		// dropped: marked here, in the same step, so that no later
		// message of the context can be taken as its answer.
		var conv *conversation
		if s.agent.checkpointed() {
			conv = s.conversation(t.owner, t.contextID)
			conv.dropQuestion = true
		}
		s.mu.Unlock()
		if conv != nil {
			// Drop it now, so that the thread no longer waits when the
			// client reads the answer. If the client leaves first, or the
			// checkpointer fails, the next run of the context drops it.
			select {
			case conv.lock <- struct{}{}:
				_ = s.dropCanceledQuestion(c.r.Context(), conv)
				<-conv.lock
			case <-c.r.Context().Done():
			}
			s.release(conv)
		}
	}
	s.mu.Lock()
	snap := t.snapshot(p.HistoryLength)
	s.mu.Unlock()
	c.reply(c.task(snap))
}

func (s *Server) subscribe(c *call) {
	p, f := c.taskID()
	if f != nil {
		c.fail(f)
		return
	}
	if s.runs != nil {
		s.runsSubscribe(c, p)
		return
	}
	s.mu.Lock()
	t := s.task(c.owner, p.ID)
	switch {
	case t == nil:
		s.mu.Unlock()
		c.fail(failf(RPCTaskNotFound, "task %q not found", p.ID))
		return
	case t.status.State.Terminal():
		state := t.status.State.short()
		s.mu.Unlock()
		c.fail(failf(RPCUnsupportedOperation, "task %q is already %s: read it with GetTask", p.ID, state))
		return
	}
	sub := newSubscriber()
	first := Event{Task: t.snapshot(p.HistoryLength)}
	if t.running {
		if t.subs == nil {
			t.subs = map[*subscriber]struct{}{}
		}
		t.subs[sub] = struct{}{}
	} else {
		// Waiting for input: the stream holds the task and ends.
		sub.last = true
		sub.signal <- struct{}{}
	}
	s.mu.Unlock()
	s.streamEvents(c, t, sub, first)
}

// listParams are the params of ListTasks.
type listParams struct {
	ContextID        string    `json:"contextId"`
	Status           TaskState `json:"status"`
	PageSize         *int      `json:"pageSize"`
	PageToken        string    `json:"pageToken"`
	HistoryLength    *int      `json:"historyLength"`
	IncludeArtifacts bool      `json:"includeArtifacts"`
}

func (s *Server) listTasks(c *call) {
	var p listParams
	if f := c.decodeParams(&p); f != nil {
		c.fail(f)
		return
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			c.fail(failf(RPCInvalidParams, "params.pageSize must be between 1 and 100, got %d", *p.PageSize))
			return
		}
		size = *p.PageSize
	}
	offset := 0
	if p.PageToken != "" {
		n, err := strconv.Atoi(p.PageToken)
		if err != nil || n < 0 {
			c.fail(failf(RPCInvalidParams, "params.pageToken %q is not a token this server gave", p.PageToken))
			return
		}
		offset = n
	}
	if s.runs != nil {
		s.runsListTasks(c, p, size, offset)
		return
	}
	s.mu.Lock()
	var found []*taskRec
	for _, t := range s.tasks {
		if t.owner == c.owner && (p.ContextID == "" || t.contextID == p.ContextID) &&
			(p.Status == "" || p.Status == StateUnspecified || t.status.State == p.Status) {
			found = append(found, t)
		}
	}
	slices.SortFunc(found, func(a, b *taskRec) int {
		return cmp.Or(b.updated.Compare(a.updated), cmp.Compare(a.id, b.id))
	})
	total := len(found)
	// offset comes from the client: offset+size may overflow.
	start := min(offset, total)
	end := start + min(size, total-start)
	page := found[start:end]
	tasks := make([]any, 0, len(page))
	for _, t := range page {
		snap := t.snapshot(p.HistoryLength)
		if !p.IncludeArtifacts {
			snap.Artifacts = nil
		}
		tasks = append(tasks, c.task(snap))
	}
	s.mu.Unlock()
	next := ""
	if end < total {
		next = strconv.Itoa(end)
	}
	c.reply(map[string]any{"tasks": tasks, "nextPageToken": next, "pageSize": size, "totalSize": total})
}
