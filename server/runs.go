package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/runs"
)

func (s *Server) runRoutes() {
	s.route("POST /threads/{thread}/runs", func(w http.ResponseWriter, r *http.Request) error {
		return s.createRun(w, r, r.PathValue("thread"), respondBackground)
	})
	s.route("POST /threads/{thread}/runs/stream", func(w http.ResponseWriter, r *http.Request) error {
		return s.createRun(w, r, r.PathValue("thread"), respondStream)
	})
	s.route("POST /threads/{thread}/runs/wait", func(w http.ResponseWriter, r *http.Request) error {
		return s.createRun(w, r, r.PathValue("thread"), respondWait)
	})
	s.route("POST /runs", func(w http.ResponseWriter, r *http.Request) error { return s.createRun(w, r, "", respondBackground) })
	s.route("POST /runs/stream", func(w http.ResponseWriter, r *http.Request) error { return s.createRun(w, r, "", respondStream) })
	s.route("POST /runs/wait", func(w http.ResponseWriter, r *http.Request) error { return s.createRun(w, r, "", respondWait) })
	s.route("POST /runs/batch", s.batch)
	s.route("POST /runs/cancel", s.cancelMany)
	s.route("GET /threads/{thread}/runs", s.listRuns)
	s.route("GET /threads/{thread}/runs/{run}", func(w http.ResponseWriter, r *http.Request) error {
		run, err := s.threadRun(r)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, runJSON(run))
	})
	s.route("DELETE /threads/{thread}/runs/{run}", func(w http.ResponseWriter, r *http.Request) error {
		run, err := s.threadRun(r)
		if err != nil {
			return err
		}
		if err := s.m.DeleteRun(r.Context(), run.ID); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.route("GET /threads/{thread}/runs/{run}/join", func(w http.ResponseWriter, r *http.Request) error {
		run, err := s.threadRun(r)
		if err != nil {
			return err
		}
		_, err = s.wait(w, r, run, flag(r, "cancel_on_disconnect"))
		return err
	})
	s.route("GET /threads/{thread}/runs/{run}/stream", func(w http.ResponseWriter, r *http.Request) error {
		run, err := s.threadRun(r)
		if err != nil {
			return err
		}
		return s.joinStream(w, r, run)
	})
	s.route("GET /runs/{run}/stream", func(w http.ResponseWriter, r *http.Request) error {
		run, err := s.m.Get(r.Context(), r.PathValue("run"))
		if err != nil {
			return err
		}
		return s.joinStream(w, r, run)
	})
	s.route("POST /threads/{thread}/runs/{run}/cancel", s.cancelRun)
	// Not in the LangGraph API: the token usage of an ended run's model
	// calls (runs.Manager.Usage), in all, per model and per agent.
	s.route("GET /threads/{thread}/runs/{run}/usage", func(w http.ResponseWriter, r *http.Request) error {
		run, err := s.threadRun(r)
		if err != nil {
			return err
		}
		u, err := s.m.Usage(r.Context(), run.ID)
		if errors.Is(err, runs.ErrNoOutput) {
			return &apiError{status: http.StatusConflict, msg: fmt.Sprintf("run %q has not ended: its usage is known when it ends", cut(run.ID, 64))}
		}
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, u)
	})
}

// serverKey is the key of run metadata under which the server keeps what
// a run was created with beyond the runs layer's request; clients do not
// see it in the run's metadata.
const serverKey = "trellis.server"

// kwargs is what the server keeps of a run's creation.
type kwargs struct {
	Assistant   string   `json:"assistant_id"`
	StreamMode  []string `json:"stream_mode"`
	Subgraphs   bool     `json:"subgraphs,omitempty"`
	Temporary   bool     `json:"temporary,omitempty"`
	OnDisconnet string   `json:"on_disconnect,omitempty"`
}

func kwargsOf(run runs.Run) kwargs {
	var k kwargs
	if v, ok := run.Metadata[serverKey]; ok {
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &k)
	}
	if k.Assistant == "" {
		k.Assistant = run.Graph
	}
	if len(k.StreamMode) == 0 {
		k.StreamMode = []string{modeValues}
	}
	return k
}

// apiStatus is a run's status as the API names it: a run that paused for
// input succeeded (its thread is interrupted), and a cancelled run was
// interrupted.
func apiStatus(s runs.Status) string {
	switch s {
	case runs.StatusInterrupted:
		return "success"
	case runs.StatusCancelled:
		return "interrupted"
	}
	return string(s)
}

// runStatus is the runs layer's status an API status filter names.
func runStatus(s string) (runs.Status, error) {
	switch s {
	case "":
		return "", nil
	case "pending", "running", "success", "error":
		return runs.Status(s), nil
	case "interrupted":
		return runs.StatusCancelled, nil
	}
	return "", unprocessable("status %q is not pending, running, success, error or interrupted", cut(s, 32))
}

func runJSON(run runs.Run) map[string]any {
	k := kwargsOf(run)
	meta := map[string]any{}
	for key, v := range run.Metadata {
		if key != serverKey {
			meta[key] = v
		}
	}
	out := map[string]any{
		"run_id": run.ID, "thread_id": run.Thread, "assistant_id": k.Assistant, "status": apiStatus(run.Status),
		"created_at": timeJSON(run.CreatedAt), "updated_at": timeJSON(run.UpdatedAt), "metadata": meta,
		"multitask_strategy": string(run.Strategy),
		"kwargs":             map[string]any{"input": run.Input, "stream_mode": k.StreamMode, "subgraphs": k.Subgraphs},
	}
	if run.Status == runs.StatusCancelled {
		out["cancel_reason"] = run.Error
	}
	return out
}

// runCreate is the body of a request for a run.
type runCreate struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *struct {
		Resume json.RawMessage `json:"resume"`
		Update json.RawMessage `json:"update"`
		Goto   json.RawMessage `json:"goto"`
	} `json:"command"`
	Config *struct {
		RecursionLimit int `json:"recursion_limit"`
	} `json:"config"`
	Metadata          map[string]any  `json:"metadata"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
	IfNotExists       string          `json:"if_not_exists"`
	AfterSeconds      float64         `json:"after_seconds"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	CheckpointID      string          `json:"checkpoint_id"`
	Checkpoint        *checkpointRef  `json:"checkpoint"`
	Webhook           string          `json:"webhook"`
}

// respond says how a run request is answered.
type respond int

const (
	respondBackground respond = iota // the run, at once
	respondStream                    // the run's events (SSE)
	respondWait                      // the run's result, when it ends
)

func empty(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	return s == "" || s == "null"
}

// request turns a run request into the runs layer's, checking it.
func (s *Server) request(ctx context.Context, thread string, b *runCreate) (runs.Request, kwargs, error) {
	a, err := s.assistant(b.AssistantID)
	if err != nil {
		if b.AssistantID == "" {
			return runs.Request{}, kwargs{}, unprocessable("assistant_id is missing")
		}
		return runs.Request{}, kwargs{}, err
	}
	modes, err := parseModes(b.StreamMode)
	if err != nil {
		return runs.Request{}, kwargs{}, err
	}
	if !empty(b.InterruptBefore) || !empty(b.InterruptAfter) {
		return runs.Request{}, kwargs{}, unprocessable("interrupt_before and interrupt_after are set when the graph is compiled (graph.InterruptBefore, graph.InterruptAfter), not per run")
	}
	if b.Webhook != "" {
		return runs.Request{}, kwargs{}, unprocessable("webhooks are not supported")
	}
	switch b.OnDisconnect {
	case "", "cancel", "continue":
	default:
		return runs.Request{}, kwargs{}, unprocessable("on_disconnect %q is not cancel or continue", cut(b.OnDisconnect, 32))
	}
	switch b.OnCompletion {
	case "", "delete", "keep":
	default:
		return runs.Request{}, kwargs{}, unprocessable("on_completion %q is not delete or keep", cut(b.OnCompletion, 32))
	}
	if b.AfterSeconds < 0 {
		return runs.Request{}, kwargs{}, unprocessable("after_seconds %v is negative", b.AfterSeconds)
	}
	k := kwargs{Assistant: a.ID, StreamMode: modes, Subgraphs: b.StreamSubgraphs, OnDisconnet: b.OnDisconnect}
	req := runs.Request{Graph: a.Graph, Thread: thread, Strategy: runs.Strategy(b.MultitaskStrategy),
		Modes: recordedModes(modes), After: time.Duration(b.AfterSeconds * float64(time.Second))}
	switch b.IfNotExists {
	case "", "reject":
		req.IfNotExists = runs.IfNotExistsReject
	case "create":
		req.IfNotExists = runs.IfNotExistsCreate
	default:
		return runs.Request{}, kwargs{}, unprocessable("if_not_exists %q is not create or reject", cut(b.IfNotExists, 32))
	}
	if thread == "" {
		req.IfNotExists = runs.IfNotExistsCreate
		k.Temporary = b.OnCompletion != "keep"
	}
	if lim, ok := a.Config["recursion_limit"].(int); ok {
		req.StepLimit = lim
	}
	if b.Config != nil && b.Config.RecursionLimit > 0 {
		req.StepLimit = b.Config.RecursionLimit
	}
	in, err := stateIn(b.Input)
	if err != nil {
		return runs.Request{}, kwargs{}, err
	}
	if !empty(in) {
		if err := s.checkFields(a.Graph, "input", in); err != nil {
			return runs.Request{}, kwargs{}, err
		}
		req.Input = in
	}
	if c := b.Command; c != nil {
		if !empty(c.Goto) {
			return runs.Request{}, kwargs{}, unprocessable("command.goto is not supported: the graph's edges choose the next nodes")
		}
		switch {
		case !empty(c.Resume) && !empty(c.Update):
			return runs.Request{}, kwargs{}, unprocessable("a command either resumes (command.resume) or updates the state (command.update), not both")
		case !empty(c.Update):
			if req.Input != nil {
				return runs.Request{}, kwargs{}, unprocessable("a run has either input or command.update, not both")
			}
			up, err := stateIn(c.Update)
			if err != nil {
				return runs.Request{}, kwargs{}, err
			}
			if err := s.checkFields(a.Graph, "command.update", up); err != nil {
				return runs.Request{}, kwargs{}, err
			}
			req.Input = up
		case c.Resume != nil:
			if req.Input != nil {
				return runs.Request{}, kwargs{}, unprocessable("a run either resumes a thread (command.resume) or gives it input, not both")
			}
			if thread == "" {
				return runs.Request{}, kwargs{}, unprocessable("a stateless run has no interrupt to resume")
			}
			res, err := s.resume(ctx, a.Graph, thread, c.Resume)
			if err != nil {
				return runs.Request{}, kwargs{}, err
			}
			req.Resume = res
		}
	}
	meta := map[string]any{}
	for key, v := range b.Metadata {
		if key == serverKey {
			return runs.Request{}, kwargs{}, unprocessable("metadata key %q is reserved", serverKey)
		}
		meta[key] = v
	}
	meta[serverKey] = k
	req.Metadata = meta
	return req, k, nil
}

// checkFields refuses a partial state (what) that is not a JSON object of
// fields of graph's state, naming the first property that is not one, so
// that a run is refused at once rather than failing when it starts.
func (s *Server) checkFields(graphName, what string, raw json.RawMessage) error {
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return unprocessable("%s must be a JSON object of state fields", what)
	}
	info, err := s.m.GraphInfo(graphName)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(info.Fields))
	for _, n := range info.Fields {
		known[strings.ToLower(n)] = true
	}
	for k := range props {
		if !known[strings.ToLower(k)] {
			return unprocessable("%s names %q, which is not a field of the state of graph %q", what, cut(k, 64), graphName)
		}
	}
	return nil
}

// resume reads command.resume: answers by interrupt ID when it is an
// object whose keys are all IDs of the interrupts the thread waits for,
// else the answer to its single interrupt.
func (s *Server) resume(ctx context.Context, graphName, thread string, raw json.RawMessage) (*runs.Resume, error) {
	st, err := s.m.ThreadState(ctx, graphName, thread, "")
	if err != nil {
		return nil, err
	}
	if len(st.Interrupts) == 0 {
		return nil, &apiError{status: http.StatusConflict, msg: fmt.Sprintf("thread %q waits for no input: there is nothing to resume", cut(thread, 64))}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var byID map[string]json.RawMessage
		if json.Unmarshal(raw, &byID) == nil && len(byID) > 0 {
			pending := map[string]bool{}
			for _, p := range st.Interrupts {
				pending[p.ID] = true
			}
			all := true
			for id := range byID {
				all = all && pending[id]
			}
			if all {
				for id, v := range byID {
					in, err := resumeValue(v)
					if err != nil {
						return nil, err
					}
					byID[id] = in
				}
				return &runs.Resume{ByID: byID}, nil
			}
		}
	}
	if len(st.Interrupts) > 1 {
		return nil, unprocessable("thread %q waits for %d answers: give command.resume as an object of answers by interrupt ID", cut(thread, 64), len(st.Interrupts))
	}
	v, err := resumeValue(raw)
	if err != nil {
		return nil, err
	}
	return &runs.Resume{Value: v, HasValue: true}, nil
}

// resumeValue converts messages in an answer that is a partial state.
func resumeValue(v json.RawMessage) (json.RawMessage, error) {
	if len(v) > 0 && v[0] == '{' {
		return stateIn(v)
	}
	return v, nil
}

func (s *Server) start(ctx context.Context, thread string, b *runCreate) (runs.Run, kwargs, error) {
	req, k, err := s.request(ctx, thread, b)
	if err != nil {
		return runs.Run{}, k, err
	}
	cp := b.CheckpointID
	if b.Checkpoint != nil && b.Checkpoint.ID != "" {
		cp = b.Checkpoint.ID
	}
	if cp != "" {
		if thread == "" {
			return runs.Run{}, k, unprocessable("a stateless run has no checkpoint to start from")
		}
		// The run continues from the checkpoint: a copy of it becomes the
		// thread's latest (a fork), as in a replay.
		if _, err := s.m.ForkThread(ctx, req.Graph, thread, cp); err != nil {
			return runs.Run{}, k, err
		}
	}
	if req.Input == nil && req.Resume == nil && thread != "" {
		// Without input, a run continues the thread where it stopped (the
		// nodes due at its latest checkpoint), as the reference server's
		// runs do; a thread with nothing due starts again from its entry.
		st, err := s.m.ThreadState(ctx, req.Graph, thread, "")
		if err != nil && !errors.Is(err, runs.ErrNotFound) {
			return runs.Run{}, k, err
		}
		if len(st.Next) > 0 && len(st.Interrupts) == 0 {
			req.Resume = &runs.Resume{Continue: true}
		}
	}
	run, err := s.m.Start(ctx, req)
	if errors.Is(err, runs.ErrThreadBusy) {
		return runs.Run{}, k, unprocessable("thread %q is already running a task: wait for it to finish or choose another multitask_strategy", cut(thread, 64))
	}
	if errors.Is(err, runs.ErrNotFound) && thread != "" {
		return runs.Run{}, k, notFound("thread %q not found (if_not_exists is reject)", cut(thread, 64))
	}
	return run, k, err
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, thread string, how respond) error {
	var b runCreate
	if err := decode(r, &b); err != nil {
		return err
	}
	run, k, err := s.start(r.Context(), thread, &b)
	if err != nil {
		return err
	}
	if thread != "" {
		w.Header().Set("Content-Location", "/threads/"+run.Thread+"/runs/"+run.ID)
	} else {
		w.Header().Set("Content-Location", "/runs/"+run.ID)
	}
	cancelOnDisconnect := b.OnDisconnect == "cancel"
	ended := false
	switch how {
	case respondStream:
		if thread != "" {
			// Where a client reconnects to (with Last-Event-ID).
			w.Header().Set("Location", "/threads/"+run.Thread+"/runs/"+run.ID+"/stream")
		}
		ended, err = s.stream(w, r, run, k, 0, cancelOnDisconnect, true)
	case respondWait:
		ended, err = s.wait(w, r, run, cancelOnDisconnect)
	default:
		err = writeJSON(w, http.StatusOK, runJSON(run))
	}
	if k.Temporary {
		s.cleanUp(r.Context(), run, ended)
	}
	return err
}

// cleanUp deletes the thread of a stateless run once the run has ended
// (at once when ended says the caller saw it end and read its output).
// The Manager deletes it with others in one transaction
// (DeleteThreadSoon).
func (s *Server) cleanUp(ctx context.Context, run runs.Run, ended bool) {
	owner := runs.OwnerOf(ctx)
	del := func(ctx context.Context) {
		if err := s.m.DeleteThreadSoon(ctx, run.Thread); err != nil && !errors.Is(err, runs.ErrClosed) {
			s.log.Warn("server: deleting the thread of a stateless run failed", "run", run.ID, "error", err)
		}
	}
	if ended {
		del(runs.WithOwner(context.WithoutCancel(ctx), owner))
		return
	}
	s.wg.Go(func() {
		ctx := runs.WithOwner(s.ctx, owner)
		if _, err := s.m.Wait(ctx, run.ID); err != nil {
			return
		}
		del(ctx)
	})
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) error {
	var list []runCreate
	if err := decode(r, &list); err != nil {
		return err
	}
	if len(list) == 0 {
		return unprocessable("the batch is empty")
	}
	if len(list) > 100 {
		return unprocessable("the batch holds %d runs, more than 100", len(list))
	}
	out := make([]map[string]any, 0, len(list))
	for i := range list {
		run, k, err := s.start(r.Context(), "", &list[i])
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				ae.msg = fmt.Sprintf("run %d: %s", i, ae.msg)
			}
			return err
		}
		if k.Temporary {
			s.cleanUp(r.Context(), run, false)
		}
		out = append(out, runJSON(run))
	}
	return writeJSON(w, http.StatusOK, out)
}

// threadRun is the run the path names, on the thread it names.
func (s *Server) threadRun(r *http.Request) (runs.Run, error) {
	run, err := s.m.Get(r.Context(), r.PathValue("run"))
	if err != nil {
		return runs.Run{}, err
	}
	if run.Thread != r.PathValue("thread") {
		return runs.Run{}, notFound("run %q not found on thread %q", cut(run.ID, 64), cut(r.PathValue("thread"), 64))
	}
	return run, nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var rq runs.RunQuery
	var err error
	for _, p := range []struct {
		name string
		to   *int
	}{{"limit", &rq.Limit}, {"offset", &rq.Offset}} {
		if v := q.Get(p.name); v != "" {
			if *p.to, err = strconv.Atoi(v); err != nil {
				return unprocessable("%s %q is not a number", p.name, cut(v, 20))
			}
		}
	}
	if rq.Status, err = runStatus(q.Get("status")); err != nil {
		return err
	}
	list, err := s.m.Runs(r.Context(), r.PathValue("thread"), rq)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, run := range list {
		out = append(out, runJSON(run))
	}
	return writeJSON(w, http.StatusOK, out)
}

func cancelAction(r *http.Request) (runs.CancelAction, error) {
	switch a := r.URL.Query().Get("action"); a {
	case "", "interrupt":
		return runs.CancelInterrupt, nil
	case "rollback":
		return runs.CancelRollback, nil
	default:
		return "", unprocessable("action %q is not interrupt or rollback", cut(a, 32))
	}
}

func flag(r *http.Request, name string) bool {
	v := r.URL.Query().Get(name)
	return v == "1" || v == "true"
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	action, err := cancelAction(r)
	if err != nil {
		return err
	}
	run, err := s.threadRun(r)
	if err != nil {
		return err
	}
	if err := s.m.Cancel(r.Context(), run.ID, action); err != nil {
		return err
	}
	if !flag(r, "wait") {
		w.WriteHeader(http.StatusAccepted)
		return nil
	}
	if _, err := s.m.Wait(r.Context(), run.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) cancelMany(w http.ResponseWriter, r *http.Request) error {
	action, err := cancelAction(r)
	if err != nil {
		return err
	}
	var body struct {
		ThreadID string   `json:"thread_id"`
		RunIDs   []string `json:"run_ids"`
		Status   string   `json:"status"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	ids := body.RunIDs
	if len(ids) == 0 {
		if body.ThreadID == "" {
			return unprocessable("name the runs to cancel: run_ids, or thread_id")
		}
		st, err := runStatus(body.Status)
		if err != nil {
			return err
		}
		if body.Status == "" || body.Status == "all" {
			st = ""
		}
		list, err := s.m.Runs(r.Context(), body.ThreadID, runs.RunQuery{Status: st, Limit: runs.MaxLimit})
		if err != nil {
			return err
		}
		for _, run := range list {
			if !run.Status.Final() {
				ids = append(ids, run.ID)
			}
		}
	}
	for _, id := range ids {
		run, err := s.m.Get(r.Context(), id)
		if err != nil {
			return err
		}
		if body.ThreadID != "" && run.Thread != body.ThreadID {
			return notFound("run %q not found on thread %q", cut(id, 64), cut(body.ThreadID, 64))
		}
		if err := s.m.Cancel(r.Context(), id, action); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// result is what a wait answers with: the thread's state when the run
// ended (with the interrupts it waits for under "__interrupt__"), or the
// run's failure under "__error__".
func (s *Server) result(ctx context.Context, run runs.Run) any {
	if run.Status == runs.StatusError {
		return map[string]any{"__error__": map[string]any{"error": "Error", "message": cut(firstLine(run.Error), 500)}}
	}
	st, err := s.m.ThreadState(ctx, run.Graph, run.Thread, "")
	if err != nil {
		s.log.Warn("server: reading a run's result failed", "run", run.ID, "error", err)
		return map[string]any{"__error__": map[string]any{"error": "Error", "message": "the run's result could not be read"}}
	}
	if len(st.Values) == 0 || string(st.Values) == "null" {
		return nil
	}
	values := stateOut(st.Values)
	if len(st.Interrupts) == 0 {
		return values
	}
	var obj map[string]any
	if json.Unmarshal(values, &obj) != nil {
		return values
	}
	list := make([]map[string]any, 0, len(st.Interrupts))
	for _, p := range st.Interrupts {
		list = append(list, interruptJSON(p))
	}
	obj["__interrupt__"] = list
	return obj
}

// wait answers with run's result once it ends, sending a blank line every
// keep-alive interval meanwhile (which a JSON parser skips). A client that
// leaves cancels the run when cancelOnDisconnect is set. ended says
// whether it saw the run end.
func (s *Server) wait(w http.ResponseWriter, r *http.Request, run runs.Run, cancelOnDisconnect bool) (ended bool, _ error) {
	ctx := r.Context()
	done := make(chan struct{})
	var (
		last runs.Run
		err  error
	)
	go func() {
		defer close(done)
		last, err = s.m.Wait(ctx, run.ID)
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(s.keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if err != nil {
				if ctx.Err() != nil {
					s.disconnected(ctx, run, cancelOnDisconnect)
					return false, nil
				}
				s.log.Error("server: waiting for a run failed", "run", run.ID, "error", err)
				b, _ := json.Marshal(map[string]any{"__error__": map[string]any{"error": "Error", "message": "internal error"}})
				_, _ = w.Write(b)
				return false, nil
			}
			b, merr := json.Marshal(s.result(ctx, last))
			if merr != nil {
				return true, merr
			}
			_, _ = w.Write(b)
			return true, nil
		case <-tick.C:
			_, _ = w.Write([]byte("\n"))
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// disconnected handles a client that left while following run.
func (s *Server) disconnected(ctx context.Context, run runs.Run, cancelRun bool) {
	if !cancelRun {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.m.Cancel(cctx, run.ID, runs.CancelInterrupt); err != nil {
		s.log.Warn("server: cancelling the run of a client that left failed", "run", run.ID, "error", err)
	}
}

// joinStream streams an existing run from where the client's Last-Event-ID
// says it stopped.
func (s *Server) joinStream(w http.ResponseWriter, r *http.Request, run runs.Run) error {
	k := kwargsOf(run)
	if q := r.URL.Query()["stream_mode"]; len(q) > 0 {
		raw, _ := json.Marshal(q)
		modes, err := parseModes(raw)
		if err != nil {
			return err
		}
		k.StreamMode = modes
	}
	var after int64
	if id := strings.TrimSpace(r.Header.Get("Last-Event-ID")); id != "" && id != "-1" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 0 {
			return badRequest("Last-Event-ID %q is not an event ID of this server (a number)", cut(id, 32))
		}
		after = n
	}
	_, err := s.stream(w, r, run, k, after, flag(r, "cancel_on_disconnect"), after == 0)
	return err
}

// stream sends run's events after the one numbered after, translated for
// k's modes, as server-sent events; each event's ID is its number in the
// run, which a client that reconnects sends back as Last-Event-ID. When
// one recorded event makes several events of the API, only the last of
// them carries the ID, so a client cut off among them gets them all again.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run runs.Run, k kwargs, after int64, cancelOnDisconnect, metadata bool) (ended bool, _ error) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return false, errors.New("server: the response writer cannot flush: streams need one that can")
	}
	// A client that left before the run ended is handled once, whichever
	// way its leaving showed: its request's context ended (which may be
	// seen first as the end of the events' channel) or a write failed.
	gone := false
	defer func() {
		if !ended && (gone || r.Context().Err() != nil) {
			s.disconnected(r.Context(), run, cancelOnDisconnect)
		}
	}()
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(id, event string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			b, _ = json.Marshal(fmt.Sprintf("(an event that does not encode as JSON: %v)", err))
		}
		if err := sse.Write(w, sse.Event{ID: id, Type: event, Data: b}); err != nil {
			if errors.Is(err, sse.ErrLineBreak) {
				return true // an event name with a line break is skipped
			}
			gone = true
			return false
		}
		flusher.Flush()
		return true
	}
	if metadata {
		write("", "metadata", map[string]any{"run_id": run.ID, "thread_id": run.Thread, "attempt": max(run.Attempts, 1)})
	}
	type item struct {
		ev  runs.Event
		err error
	}
	ch := make(chan item)
	go func() {
		defer close(ch)
		for ev, err := range s.m.Stream(ctx, run.ID, 0) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		stop()
		for range ch {
		}
	}()
	info, err := s.m.GraphInfo(run.Graph)
	if err != nil {
		return false, err
	}
	tr := newTranslator(run.ID, run.Thread, info.Fields, k.StreamMode, k.Subgraphs)
	tr.load = func(checkpoint string) json.RawMessage {
		st, err := s.m.ThreadState(ctx, run.Graph, run.Thread, checkpoint)
		if err != nil {
			return nil
		}
		return st.Values
	}
	tick := time.NewTicker(s.keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return ended, nil
		case <-tick.C:
			if _, err := io.WriteString(w, sse.KeepAlive); err != nil {
				gone = true
				return ended, nil
			}
			flusher.Flush()
		case it, ok := <-ch:
			if !ok {
				return ended, nil
			}
			if it.err != nil {
				if r.Context().Err() != nil {
					return ended, nil
				}
				msg := "internal error"
				if errors.Is(it.err, runs.ErrNotFound) {
					msg = "run not found"
				} else {
					s.log.Error("server: streaming a run failed", "run", run.ID, "error", it.err)
				}
				write("", "error", map[string]any{"error": "Error", "message": msg})
				return ended, nil
			}
			ev := it.ev
			if ev.Kind == runs.KindRunEnd {
				ended = true
			}
			out := tr.translate(ev)
			if ev.Kind == runs.KindRunEnd && ev.Seq > after {
				switch ev.Status {
				case runs.StatusError:
					out = append(out, apiEvent{event: "error", data: map[string]any{"error": "Error", "message": cut(firstLine(ev.Error), 500)}})
				}
			}
			if ev.Seq <= after {
				continue
			}
			id := strconv.FormatInt(ev.Seq, 10)
			for i, e := range out {
				eid := ""
				if i == len(out)-1 {
					eid = id
				}
				if !write(eid, e.event, e.data) {
					return ended, nil
				}
			}
		}
	}
}
