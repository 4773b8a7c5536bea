package a2a

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/runs"
)

// WithRuns serves the agent's tasks as runs of m (see package runs), so
// that they outlive the process and any replica of the server answers for
// them: a task is started on one replica, run by whichever worker of m
// takes it, read (GetTask, ListTasks), followed (SubscribeToTask),
// continued and canceled through any replica that shares m's database.
//
// The agent's graph must be registered with m (runs.Graph) and compiled
// with m.Saver(). Its conversation field must have no reducer or
// nodes.MessagesReducer (the prebuilt agents use it): each message sends
// the whole conversation as the run's input. The task table is the runs
// table: a task is the run its first message started, followed by the
// runs that its later messages (answers to its questions) started; its
// history and answer are read back from those runs and their final
// states. WithMaxTasks, WithMaxContexts and their totals do not apply:
// the database keeps the tasks. Streams carry the models' text as it
// comes when the worker that runs the task records it
// (graph.ModeMessages); a stream that follows a task started elsewhere
// gets the events from the moment it subscribed.
func WithRuns(m *runs.Manager) ServerOption {
	return func(c *serverConfig) {
		if m == nil {
			c.problems = append(c.problems, "WithRuns: the runs manager is nil")
			return
		}
		c.runs = m
	}
}

// The keys of the run metadata that tie runs to tasks.
const (
	metaTask    = "a2a_task"    // the task's ID (the ID of its first run)
	metaContext = "a2a_context" // the task's contextId
	metaMessage = "a2a_message" // the client's message that started the run
	metaBefore  = "a2a_before"  // messages in the conversation before the run's own
	metaAgent   = "a2a_agent"   // the served agent's name (on threads)
)

// runsMode serves tasks as runs (WithRuns).
type runsMode struct {
	m     *runs.Manager
	graph string // the agent's name, under which m knows it
	field string // the JSON name of the state's conversation
}

// conversationField finds the JSON name under which S holds its
// conversation.
func conversationField[S any, PS State[S]]() (string, error) {
	var s S
	*PS(&s).ChatMessages() = []model.Message{{ID: "a2a-probe", Role: model.RoleUser}}
	raw, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("the state does not encode as JSON: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("the state does not encode as a JSON object: %w", err)
	}
	for k, v := range obj {
		if len(v) > 0 && v[0] == '[' && bytes.Contains(v, []byte(`"a2a-probe"`)) {
			return k, nil
		}
	}
	return "", errors.New("the state's conversation is not one of its JSON fields")
}

func ownerCtx(c *call) context.Context { return runs.WithOwner(c.r.Context(), c.owner) }

// runsFailure turns an error of the runs layer into a client's failure,
// without the internals of a store's error.
func (s *Server) runsFailure(what, id string, err error) *rpcFailure {
	switch {
	case errors.Is(err, runs.ErrNotFound):
		return failf(RPCTaskNotFound, "task %q not found", id)
	case errors.Is(err, runs.ErrThreadBusy):
		return failf(RPCUnsupportedOperation, "the context of this message is busy with another task: wait for it (GetTask) and send again")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return failf(RPCInternalError, "%s: the request ended first", what)
	}
	return failf(RPCInternalError, "%s failed", what)
}

// taskRuns returns the runs of owner's task id, oldest first.
func (r *runsMode) taskRuns(ctx context.Context, id string) ([]runs.Run, error) {
	first, err := r.m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := first.Metadata[metaContext]; !ok || metaStr(first, metaTask) != "" {
		// Not a run of this server, or a later run of a task.
		return nil, fmt.Errorf("run %s is not a task's: %w", id, runs.ErrNotFound)
	}
	all, err := r.m.Runs(ctx, first.Thread, runs.RunQuery{Limit: runs.MaxLimit})
	if err != nil {
		return nil, err
	}
	var out []runs.Run
	for _, run := range slices.Backward(all) {
		if run.ID == id || metaStr(run, metaTask) == id {
			out = append(out, run)
		}
	}
	return out, nil
}

func metaStr(r runs.Run, key string) string {
	s, _ := r.Metadata[key].(string)
	return s
}

// view builds the task that runs (oldest first) make, as a client sees it.
// thread is the state of their thread (for a task that waits: whether its
// question is still pending).
func (s *Server) view(ctx context.Context, rs []runs.Run, thread runs.Thread) *Task {
	first, last := rs[0], rs[len(rs)-1]
	t := &Task{ID: first.ID, ContextID: metaStr(first, metaContext)}
	agentMsg := func(parts []Part) Message {
		return Message{MessageID: last.ID + "-" + strconv.Itoa(len(t.History)), ContextID: t.ContextID, TaskID: t.ID, Role: RoleAgent, Parts: parts}
	}
	var status TaskStatus
	for i, run := range rs {
		if raw, err := json.Marshal(run.Metadata[metaMessage]); err == nil {
			var m Message
			if json.Unmarshal(raw, &m) == nil && len(m.Parts) > 0 {
				m.TaskID, m.ContextID = t.ID, t.ContextID
				t.History = append(t.History, m)
			}
		}
		status = TaskStatus{Timestamp: run.UpdatedAt.UTC()}
		text := ""
		switch run.Status {
		case runs.StatusPending:
			status.State = StateSubmitted
		case runs.StatusRunning:
			status.State = StateWorking
		case runs.StatusSuccess:
			status.State = StateCompleted
			if answer, ok := s.runAnswer(ctx, run); ok {
				parts := a2aParts(answer)
				t.Artifacts = append(t.Artifacts, Artifact{ArtifactID: "answer", Name: "answer", Parts: parts})
				t.History = append(t.History, agentMsg(parts))
			} else {
				status.State, text = StateFailed, "The agent failed: "+ErrNoAnswer.Error()
			}
		case runs.StatusError:
			status.State, text = StateFailed, "The agent failed: "+s.cfg.errorText(errors.New(run.Error))
		case runs.StatusCancelled:
			status.State, text = StateCanceled, "The task was canceled."
		case runs.StatusInterrupted:
			switch {
			case i < len(rs)-1:
				// A later message answered it.
				status.State, text = StateWorking, questionText(run.Interrupts)
			case thread.Status == runs.ThreadInterrupted && thread.ActiveRun == "" && newestOfThread(ctx, s.runs, thread.ID) == run.ID:
				status.State, text = StateInputRequired, questionText(run.Interrupts)
			default:
				// Canceled, or a later message of the context answered
				// its question in a task of its own.
				status.State, text = StateCanceled, "The task was canceled: its question was dropped or answered in another task of its context."
			}
		}
		if text != "" {
			m := agentMsg([]Part{TextPart(text)})
			t.History = append(t.History, m)
			if i == len(rs)-1 {
				status.Message = &m
			}
		}
	}
	t.Status = status
	return t
}

// newestOfThread returns the ID of the thread's newest run, "" on failure.
func newestOfThread(ctx context.Context, r *runsMode, thread string) string {
	list, err := r.m.Runs(ctx, thread, runs.RunQuery{Limit: 1})
	if err != nil || len(list) == 0 {
		return ""
	}
	return list[0].ID
}

// runAnswer reads the answer of a run that succeeded from its final state.
func (s *Server) runAnswer(ctx context.Context, run runs.Run) (model.Message, bool) {
	out, err := s.runs.m.Output(ctx, run.ID)
	if err != nil {
		return model.Message{}, false
	}
	msgs, err := s.runs.messages(out)
	if err != nil {
		return model.Message{}, false
	}
	before := 0
	if f, ok := run.Metadata[metaBefore].(float64); ok {
		before = int(f)
	}
	return finalAnswer(msgs[min(before, len(msgs)):])
}

// messages reads the conversation out of a state in JSON.
func (r *runsMode) messages(values json.RawMessage) ([]model.Message, error) {
	if len(values) == 0 || string(values) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(values, &obj); err != nil {
		return nil, err
	}
	var msgs []model.Message
	if raw, ok := obj[r.field]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// taskOf reads owner's task id and its thread.
func (s *Server) taskOf(ctx context.Context, id string) ([]runs.Run, runs.Thread, error) {
	rs, err := s.runs.taskRuns(ctx, id)
	if err != nil {
		return nil, runs.Thread{}, err
	}
	th, err := s.runs.m.Thread(ctx, rs[0].Thread)
	if err != nil {
		return nil, runs.Thread{}, err
	}
	return rs, th, nil
}

// runsSend is send for WithRuns: the message starts a run on the
// context's thread (answering its question when it waits for one).
func (s *Server) runsSend(c *call, stream, blocking bool, m Message, historyLength *int) {
	ctx := ownerCtx(c)
	taskID, contextID := "", m.ContextID
	if m.TaskID != "" {
		rs, th, err := s.taskOf(ctx, m.TaskID)
		if err != nil {
			c.fail(s.runsFailure("reading the task", m.TaskID, err))
			return
		}
		t := s.view(ctx, rs, th)
		switch {
		case m.ContextID != "" && m.ContextID != t.ContextID:
			c.fail(failf(RPCInvalidParams, "params.message.contextId %q does not match the context %q of task %q", m.ContextID, t.ContextID, t.ID))
			return
		case t.Status.State.Terminal():
			c.fail(failf(RPCUnsupportedOperation, "task %q is %s and takes no more messages: send the message without taskId, with contextId %q, to go on in the conversation", t.ID, t.Status.State.short(), t.ContextID))
			return
		case !t.Status.State.Interrupted():
			c.fail(failf(RPCUnsupportedOperation, "task %q is still running: wait for it (GetTask) before sending it a message", t.ID))
			return
		}
		taskID, contextID = t.ID, t.ContextID
	}
	if contextID == "" {
		contextID = newID()
	}
	m.ContextID, m.Role = contextID, RoleUser
	if m.MessageID == "" {
		m.MessageID = newID()
	}
	thread := s.ThreadID(c.owner, contextID)
	req, f := s.runsRequest(ctx, thread, m)
	if f != nil {
		c.fail(f)
		return
	}
	if stream {
		req.Modes = graph.ModeEvents | graph.ModeMessages
	}
	// A task's first run carries no task ID: the task's ID is its own.
	// Later runs carry the task's.
	req.Metadata[metaTask] = taskID
	run, err := s.runs.m.Start(ctx, req)
	if err != nil {
		c.fail(s.runsFailure("starting the task", cmp.Or(taskID, contextID), err))
		return
	}
	if taskID == "" {
		taskID = run.ID
	}
	if stream {
		s.runsStream(c, taskID, run.ID, time.Time{})
		return
	}
	if blocking {
		if _, err := s.runs.m.Wait(ctx, run.ID); err != nil {
			if c.r.Context().Err() != nil {
				// The client left before the answer, without the
				// task's ID to ask for it later: the run would be wasted.
				_ = s.runs.m.Cancel(context.WithoutCancel(ctx), run.ID, runs.CancelInterrupt)
				return
			}
			c.fail(s.runsFailure("waiting for the task", taskID, err))
			return
		}
	}
	s.replyTask(c, taskID, historyLength, func(t *Task) {
		if c.legacy {
			c.reply(toLegacyTask(t))
			return
		}
		c.reply(Event{Task: t})
	})
}

// runsRequest makes the run request of a message on thread: an answer to
// the question the thread waits for, or a new turn of its conversation.
func (s *Server) runsRequest(ctx context.Context, thread string, m Message) (runs.Request, *rpcFailure) {
	user := userMessage(m)
	raw, err := json.Marshal(m)
	if err != nil {
		return runs.Request{}, failf(RPCInvalidParams, "params.message does not encode as JSON")
	}
	var stored map[string]any
	_ = json.Unmarshal(raw, &stored)
	req := runs.Request{Graph: s.runs.graph, Thread: thread, Strategy: runs.StrategyReject,
		Metadata: map[string]any{metaContext: m.ContextID, metaMessage: stored, metaAgent: s.name}}
	st, err := s.runs.m.ThreadState(ctx, s.runs.graph, thread, "")
	switch {
	case errors.Is(err, runs.ErrNotFound):
	case err != nil:
		return req, s.runsFailure("reading the conversation", m.ContextID, err)
	}
	msgs, err := s.runs.messages(st.Values)
	if err != nil {
		return req, failf(RPCInternalError, "reading the conversation failed")
	}
	if len(st.Interrupts) > 0 {
		// The agent asked a question: the message answers it.
		answer, _ := json.Marshal(user.Text())
		req.Resume = &runs.Resume{ByID: map[string]json.RawMessage{}}
		for _, in := range st.Interrupts {
			req.Resume.ByID[in.ID] = answer
		}
		req.Metadata[metaBefore] = len(msgs)
		return req, nil
	}
	conv := append(answerOpenCalls(msgs), user)
	req.Metadata[metaBefore] = len(conv)
	in, err := json.Marshal(map[string]any{s.runs.field: conv})
	if err != nil {
		return req, failf(RPCInvalidParams, "params.message does not encode as JSON")
	}
	req.Input = in
	return req, nil
}

// replyTask reads owner's task and passes it to reply, or fails the call.
func (s *Server) replyTask(c *call, id string, historyLength *int, reply func(*Task)) {
	ctx := ownerCtx(c)
	rs, th, err := s.taskOf(ctx, id)
	if err != nil {
		c.fail(s.runsFailure("reading the task", id, err))
		return
	}
	reply(trimHistory(s.view(ctx, rs, th), historyLength))
}

func trimHistory(t *Task, historyLength *int) *Task {
	if historyLength != nil {
		h := t.History
		t.History = h[len(h)-min(max(*historyLength, 0), len(h)):]
	}
	return t
}

// runsStream writes the events of the task's run as server-sent events
// until the run ends or the client leaves. Events recorded before since
// (when not zero) are left out.
func (s *Server) runsStream(c *call, taskID, runID string, since time.Time) {
	ctx := ownerCtx(c)
	rs, th, err := s.taskOf(ctx, taskID)
	if err != nil {
		c.fail(s.runsFailure("reading the task", taskID, err))
		return
	}
	write, _ := c.startEvents()
	t := s.view(ctx, rs, th)
	if !write(Event{Task: t}) {
		return
	}
	note := func(text string, delta bool) bool {
		m := Message{MessageID: newID(), ContextID: t.ContextID, TaskID: t.ID, Role: RoleAgent, Parts: []Part{TextPart(text)}}
		if delta {
			m.Metadata = map[string]any{MetaDelta: true}
		}
		return write(Event{StatusUpdate: &StatusUpdate{TaskID: t.ID, ContextID: t.ContextID,
			Status: TaskStatus{State: StateWorking, Message: &m, Timestamp: nowUTC()}}})
	}
	working := t.Status.State == StateWorking
	for ev, err := range s.runs.m.Stream(ctx, runID, 0) {
		if err != nil {
			return // the client left, or the store failed: GetTask tells the rest
		}
		if ev.Kind == runs.KindRunEnd {
			break
		}
		if len(ev.Path) > 0 || (!since.IsZero() && ev.Time.Before(since)) {
			continue
		}
		if !working {
			working = true
			if !write(Event{StatusUpdate: &StatusUpdate{TaskID: t.ID, ContextID: t.ContextID,
				Status: TaskStatus{State: StateWorking, Timestamp: nowUTC()}}}) {
				return
			}
		}
		switch ev.Kind {
		case nodes.KindModelDelta:
			var chunk model.Chunk
			if json.Unmarshal(ev.Payload, &chunk) == nil && chunk.Text != "" && !note(chunk.Text, true) {
				return
			}
		case nodes.KindToolStart:
			var e executor.Event
			if json.Unmarshal(ev.Payload, &e) == nil {
				if !note("Calling "+cmp.Or(e.Title, e.Call.Name)+".", false) {
					return
				}
			}
		}
	}
	rs, th, err = s.taskOf(context.WithoutCancel(ctx), taskID)
	if err != nil {
		return
	}
	t = s.view(ctx, rs, th)
	for _, a := range t.Artifacts[min(len(t.Artifacts), artifactsBefore(rs)):] {
		if !write(Event{ArtifactUpdate: &ArtifactUpdate{TaskID: t.ID, ContextID: t.ContextID, Artifact: a, LastChunk: true}}) {
			return
		}
	}
	write(Event{StatusUpdate: &StatusUpdate{TaskID: t.ID, ContextID: t.ContextID, Status: t.Status}})
}

// artifactsBefore counts the answers of the task's runs before its last.
func artifactsBefore(rs []runs.Run) int {
	n := 0
	for _, r := range rs[:len(rs)-1] {
		if r.Status == runs.StatusSuccess {
			n++
		}
	}
	return n
}

func (s *Server) runsGetTask(c *call, p taskIDParams) {
	s.replyTask(c, p.ID, p.HistoryLength, func(t *Task) { c.reply(c.task(t)) })
}

// runsCancelTask cancels the task's run, on whichever worker runs it, or
// drops the question of a task that waits for input.
func (s *Server) runsCancelTask(c *call, p taskIDParams) {
	ctx := ownerCtx(c)
	rs, th, err := s.taskOf(ctx, p.ID)
	if err != nil {
		c.fail(s.runsFailure("reading the task", p.ID, err))
		return
	}
	t := s.view(ctx, rs, th)
	last := rs[len(rs)-1]
	switch {
	case t.Status.State.Terminal():
		c.fail(failf(RPCTaskNotCancelable, "task %q is already %s", p.ID, t.Status.State.short()))
		return
	case t.Status.State.Interrupted():
		if err := s.dropQuestion(ctx, th.ID); err != nil {
			c.fail(s.runsFailure("canceling the task", p.ID, err))
			return
		}
	default:
		if err := s.runs.m.Cancel(ctx, last.ID, runs.CancelInterrupt); err != nil {
			c.fail(s.runsFailure("canceling the task", p.ID, err))
			return
		}
		if _, err := s.runs.m.Wait(ctx, last.ID); err != nil {
			c.fail(s.runsFailure("canceling the task", p.ID, err))
			return
		}
		// A run stopped between a model's calls and their results leaves
		// them open: the next message closes them (runsRequest).
	}
	s.replyTask(c, p.ID, p.HistoryLength, func(t *Task) { c.reply(c.task(t)) })
}

// dropQuestion ends the pause of thread without answering it: an update
// as END answers the open tool calls as canceled, and nothing is due.
func (s *Server) dropQuestion(ctx context.Context, thread string) error {
	st, err := s.runs.m.ThreadState(ctx, s.runs.graph, thread, "")
	if err != nil {
		return err
	}
	msgs, err := s.runs.messages(st.Values)
	if err != nil {
		return err
	}
	values, err := json.Marshal(map[string]any{s.runs.field: answerOpenCalls(msgs)})
	if err != nil {
		return err
	}
	_, err = s.runs.m.UpdateState(ctx, s.runs.graph, thread, values, graph.END, "")
	return err
}

func (s *Server) runsSubscribe(c *call, p taskIDParams) {
	ctx := ownerCtx(c)
	since := time.Now()
	rs, th, err := s.taskOf(ctx, p.ID)
	if err != nil {
		c.fail(s.runsFailure("reading the task", p.ID, err))
		return
	}
	t := s.view(ctx, rs, th)
	if t.Status.State.Terminal() {
		c.fail(failf(RPCUnsupportedOperation, "task %q is already %s: read it with GetTask", p.ID, t.Status.State.short()))
		return
	}
	s.runsStream(c, p.ID, rs[len(rs)-1].ID, since)
}

// runsListTasks lists owner's tasks of this agent, newest first.
func (s *Server) runsListTasks(c *call, p listParams, size, offset int) {
	ctx := ownerCtx(c)
	var threads []runs.Thread
	if p.ContextID != "" {
		th, err := s.runs.m.Thread(ctx, s.ThreadID(c.owner, p.ContextID))
		if err != nil && !errors.Is(err, runs.ErrNotFound) {
			c.fail(s.runsFailure("listing tasks", "", err))
			return
		}
		if err == nil {
			threads = append(threads, th)
		}
	} else {
		found, err := s.runs.m.SearchThreads(ctx, runs.ThreadQuery{Metadata: map[string]any{metaAgent: s.name}, Limit: runs.MaxLimit})
		if err != nil {
			c.fail(s.runsFailure("listing tasks", "", err))
			return
		}
		threads = found
	}
	var found []*Task
	for _, th := range threads {
		all, err := s.runs.m.Runs(ctx, th.ID, runs.RunQuery{Limit: runs.MaxLimit})
		if err != nil {
			c.fail(s.runsFailure("listing tasks", "", err))
			return
		}
		byTask := map[string][]runs.Run{}
		var order []string
		for _, r := range slices.Backward(all) {
			id := metaStr(r, metaTask)
			if _, ours := r.Metadata[metaContext]; !ours {
				continue
			}
			if id == "" {
				id = r.ID
			}
			if _, ok := byTask[id]; !ok {
				order = append(order, id)
			}
			byTask[id] = append(byTask[id], r)
		}
		for _, id := range order {
			rs := byTask[id]
			if rs[0].ID != id {
				continue // its first run is gone
			}
			t := s.view(ctx, rs, th)
			if p.Status == "" || p.Status == StateUnspecified || t.Status.State == p.Status {
				found = append(found, t)
			}
		}
	}
	slices.SortFunc(found, func(a, b *Task) int {
		return cmp.Or(b.Status.Timestamp.Compare(a.Status.Timestamp), cmp.Compare(a.ID, b.ID))
	})
	total := len(found)
	start := min(offset, total)
	end := start + min(size, total-start)
	tasks := make([]any, 0, end-start)
	for _, t := range found[start:end] {
		t = trimHistory(t, p.HistoryLength)
		if !p.IncludeArtifacts {
			t.Artifacts = nil
		}
		tasks = append(tasks, c.task(t))
	}
	next := ""
	if end < total {
		next = strconv.Itoa(end)
	}
	c.reply(map[string]any{"tasks": tasks, "nextPageToken": next, "pageSize": size, "totalSize": total})
}
