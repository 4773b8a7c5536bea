package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
)

func (s *Server) threadRoutes() {
	s.route("POST /threads", s.createThread)
	s.route("POST /threads/search", s.searchThreads)
	s.route("POST /threads/count", s.countThreads)
	s.route("GET /threads/{thread}", func(w http.ResponseWriter, r *http.Request) error {
		t, err := s.m.Thread(r.Context(), r.PathValue("thread"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, s.threadJSON(r, t, true))
	})
	s.route("PATCH /threads/{thread}", s.patchThread)
	s.route("DELETE /threads/{thread}", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.m.DeleteThread(r.Context(), r.PathValue("thread")); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	s.route("POST /threads/{thread}/copy", func(w http.ResponseWriter, r *http.Request) error {
		t, err := s.m.CopyThread(r.Context(), r.PathValue("thread"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, s.threadJSON(r, t, true))
	})
	s.route("GET /threads/{thread}/state", func(w http.ResponseWriter, r *http.Request) error {
		return s.getState(w, r, "")
	})
	s.route("GET /threads/{thread}/state/{checkpoint}", func(w http.ResponseWriter, r *http.Request) error {
		return s.getState(w, r, r.PathValue("checkpoint"))
	})
	s.route("POST /threads/{thread}/state/checkpoint", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Checkpoint checkpointRef `json:"checkpoint"`
		}
		if err := decode(r, &body); err != nil {
			return err
		}
		return s.getState(w, r, body.Checkpoint.ID)
	})
	s.route("POST /threads/{thread}/state", s.updateState)
	s.route("PATCH /threads/{thread}/state", func(w http.ResponseWriter, r *http.Request) error {
		return &apiError{status: http.StatusNotImplemented, msg: "checkpoint metadata is written by the engine only; update the thread's metadata instead (PATCH /threads/{thread_id})"}
	})
	s.route("POST /threads/{thread}/history", s.history)
	s.route("GET /threads/{thread}/history", s.history)
}

// checkpointRef names a checkpoint as the API does.
type checkpointRef struct {
	ID string `json:"checkpoint_id"`
	NS string `json:"checkpoint_ns"`
}

// graphOf is the graph a thread's state is read with: its latest run's,
// else the one its metadata names (graph_id, which the SDK sets when it
// creates a thread, or assistant_id).
func (s *Server) graphOf(t runs.Thread) string {
	if t.Graph != "" {
		return t.Graph
	}
	if g, ok := t.Metadata["graph_id"].(string); ok {
		if _, err := s.m.GraphInfo(g); err == nil {
			return g
		}
	}
	if id, ok := t.Metadata["assistant_id"].(string); ok {
		if a, err := s.assistant(id); err == nil {
			return a.Graph
		}
	}
	return ""
}

// threadJSON is a thread as the API shows it; with values, its state's
// values and interrupts too.
func (s *Server) threadJSON(r *http.Request, t runs.Thread, values bool) map[string]any {
	meta := t.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	out := map[string]any{
		"thread_id": t.ID, "created_at": timeJSON(t.CreatedAt), "updated_at": timeJSON(t.UpdatedAt),
		"state_updated_at": timeJSON(t.UpdatedAt), "metadata": meta, "status": string(t.Status),
		"config": map[string]any{}, "interrupts": map[string]any{},
	}
	if values {
		st, err := s.m.ThreadState(r.Context(), s.graphOf(t), t.ID, "")
		if err == nil && st.CheckpointID != "" {
			out["values"] = stateOut(st.Values)
			out["interrupts"] = interruptsByTask(st)
		} else if err != nil && !errors.Is(err, runs.ErrNotFound) {
			s.log.Warn("server: reading a thread's state failed", "thread", t.ID, "error", err)
		}
	}
	return out
}

// interruptJSON is an interrupt as the API shows it.
func interruptJSON(p graph.PendingInterrupt) map[string]any {
	out := map[string]any{"id": p.ID, "value": p.Payload, "when": string(p.When), "resumable": true}
	if len(p.Path) > 0 {
		out["ns"] = p.Path
	}
	return out
}

func interruptsByTask(st runs.ThreadState) map[string]any {
	out := map[string]any{}
	for _, p := range st.Interrupts {
		k := taskID(st, p.Node)
		list, _ := out[k].([]map[string]any)
		out[k] = append(list, interruptJSON(p))
	}
	return out
}

// taskID names the task of node at a checkpoint.
func taskID(st runs.ThreadState, node string) string {
	return st.CheckpointID + ":" + node
}

func checkpointJSON(thread, id string) any {
	if id == "" {
		return nil
	}
	return map[string]any{"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": id, "checkpoint_map": nil}
}

// stateJSON is a thread's state as the API shows it.
func stateJSON(st runs.ThreadState) map[string]any {
	tasks := []map[string]any{}
	interrupts := []map[string]any{}
	for _, n := range st.Next {
		ins := []map[string]any{}
		for _, p := range st.Interrupts {
			if p.Node == n {
				ins = append(ins, interruptJSON(p))
			}
		}
		tasks = append(tasks, map[string]any{"id": taskID(st, n), "name": n, "error": nil, "interrupts": ins,
			"checkpoint": nil, "state": nil, "result": nil, "path": []string{"__pregel_pull", n}})
	}
	for _, p := range st.Interrupts {
		interrupts = append(interrupts, interruptJSON(p))
	}
	values := json.RawMessage("{}")
	if len(st.Values) > 0 && string(st.Values) != "null" {
		values = stateOut(st.Values)
	}
	out := map[string]any{
		"values": values, "next": st.Next, "tasks": tasks, "interrupts": interrupts,
		"checkpoint":        checkpointJSON(st.Thread, st.CheckpointID),
		"parent_checkpoint": checkpointJSON(st.Thread, st.ParentID),
		"metadata":          map[string]any{"source": st.Source, "step": st.Step, "parents": map[string]any{}, "writes": nil},
		"created_at":        nil,
	}
	if st.Next == nil {
		out["next"] = []string{}
	}
	if !st.CreatedAt.IsZero() {
		out["created_at"] = timeJSON(st.CreatedAt)
	}
	if st.CheckpointID == "" {
		out["checkpoint"] = map[string]any{"thread_id": st.Thread, "checkpoint_ns": "", "checkpoint_id": nil, "checkpoint_map": nil}
		out["metadata"] = nil
	}
	return out
}

func (s *Server) createThread(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ThreadID   string         `json:"thread_id"`
		Metadata   map[string]any `json:"metadata"`
		IfExists   string         `json:"if_exists"`
		Supersteps []any          `json:"supersteps"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	switch body.IfExists {
	case "", "raise", "do_nothing":
	default:
		return unprocessable("if_exists %q is not raise or do_nothing", cut(body.IfExists, 32))
	}
	if len(body.Supersteps) > 0 {
		return unprocessable("supersteps are not supported: create the thread, then update its state (POST /threads/{thread_id}/state)")
	}
	if g, ok := body.Metadata["graph_id"]; ok && g == nil {
		delete(body.Metadata, "graph_id")
	}
	t, err := s.m.CreateThread(r.Context(), body.ThreadID, body.Metadata)
	if errors.Is(err, runs.ErrExists) && body.IfExists == "do_nothing" {
		t, err = s.m.Thread(r.Context(), body.ThreadID)
		if errors.Is(err, runs.ErrNotFound) {
			// Another owner's: it exists all the same.
			return &apiError{status: http.StatusConflict, msg: fmt.Sprintf("thread %q already exists", cut(body.ThreadID, 64))}
		}
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.threadJSON(r, t, true))
}

type threadQuery struct {
	Metadata map[string]any `json:"metadata"`
	IDs      []string       `json:"ids"`
	Status   string         `json:"status"`
	Values   map[string]any `json:"values"`
	Limit    *int           `json:"limit"`
	Offset   int            `json:"offset"`
	Select   []string       `json:"select"`
}

func (s *Server) findThreads(r *http.Request, q threadQuery, limit int) ([]runs.Thread, error) {
	switch runs.ThreadStatus(q.Status) {
	case "", runs.ThreadIdle, runs.ThreadBusy, runs.ThreadInterrupted, runs.ThreadError:
	default:
		return nil, unprocessable("status %q is not idle, busy, interrupted or error", cut(q.Status, 32))
	}
	if len(q.Values) > 0 {
		return nil, unprocessable("searching threads by values is not supported: search by metadata or status")
	}
	if q.Offset < 0 {
		return nil, unprocessable("offset %d is negative", q.Offset)
	}
	if len(q.IDs) > 0 {
		var out []runs.Thread
		for _, id := range q.IDs {
			t, err := s.m.Thread(r.Context(), id)
			if errors.Is(err, runs.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if q.Status != "" && string(t.Status) != q.Status || !containsAll(t.Metadata, q.Metadata) {
				continue
			}
			out = append(out, t)
		}
		if q.Offset >= len(out) {
			return nil, nil
		}
		out = out[q.Offset:]
		return out[:min(len(out), limit)], nil
	}
	return s.m.SearchThreads(r.Context(), runs.ThreadQuery{Metadata: q.Metadata, Status: runs.ThreadStatus(q.Status), Limit: limit, Offset: q.Offset})
}

func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) error {
	var q threadQuery
	if err := decode(r, &q); err != nil {
		return err
	}
	limit, err := limitOf(q.Limit)
	if err != nil {
		return err
	}
	list, err := s.findThreads(r, q, limit)
	if err != nil {
		return err
	}
	out := []map[string]any{}
	for _, t := range list {
		out = append(out, selectKeys(s.threadJSON(r, t, true), q.Select))
	}
	if len(list) == limit {
		w.Header().Set("X-Pagination-Next", strconv.Itoa(q.Offset+limit))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) countThreads(w http.ResponseWriter, r *http.Request) error {
	var q threadQuery
	if err := decode(r, &q); err != nil {
		return err
	}
	q.Offset = 0
	n := 0
	for {
		list, err := s.findThreads(r, q, runs.MaxLimit)
		if err != nil {
			return err
		}
		n += len(list)
		if len(list) < runs.MaxLimit || len(q.IDs) > 0 {
			break
		}
		q.Offset += len(list)
	}
	return writeJSON(w, http.StatusOK, n)
}

func (s *Server) patchThread(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	t, err := s.m.UpdateThread(r.Context(), r.PathValue("thread"), body.Metadata)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, s.threadJSON(r, t, true))
}

func (s *Server) getState(w http.ResponseWriter, r *http.Request, checkpoint string) error {
	t, err := s.m.Thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	st, err := s.m.ThreadState(r.Context(), s.graphOf(t), t.ID, checkpoint)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, stateJSON(st))
}

func (s *Server) updateState(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Values       json.RawMessage `json:"values"`
		AsNode       string          `json:"as_node"`
		CheckpointID string          `json:"checkpoint_id"`
		Checkpoint   *checkpointRef  `json:"checkpoint"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	t, err := s.m.Thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	cp := body.CheckpointID
	if body.Checkpoint != nil && body.Checkpoint.ID != "" {
		cp = body.Checkpoint.ID
	}
	values, err := stateIn(body.Values)
	if err != nil {
		return err
	}
	if v := string(values); v != "" && v != "null" && values[0] != '{' {
		return unprocessable("values must be a JSON object of state fields")
	}
	g := s.graphOf(t)
	if g == "" {
		return unprocessable("thread %q has no graph yet: run it first, or create it with metadata.graph_id", cut(t.ID, 64))
	}
	id, err := s.m.UpdateState(r.Context(), g, t.ID, values, body.AsNode, cp)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"checkpoint": checkpointJSON(t.ID, id)})
}

func (s *Server) history(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Limit    *int            `json:"limit"`
		Before   json.RawMessage `json:"before"`
		Metadata map[string]any  `json:"metadata"`
	}
	if r.Method == http.MethodPost {
		if err := decode(r, &body); err != nil {
			return err
		}
	} else {
		q := r.URL.Query()
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil {
				return unprocessable("limit %q is not a number", cut(l, 20))
			}
			body.Limit = &n
		}
		if b := q.Get("before"); b != "" {
			body.Before, _ = json.Marshal(b)
		}
	}
	limit, err := limitOf(body.Limit)
	if err != nil {
		return err
	}
	hq := runs.HistoryQuery{Limit: limit}
	if len(body.Before) > 0 && string(body.Before) != "null" {
		var ref checkpointRef
		if json.Unmarshal(body.Before, &hq.Before) != nil {
			if err := json.Unmarshal(body.Before, &ref); err != nil {
				return unprocessable("before must be a checkpoint ID or {\"checkpoint_id\": ...}")
			}
			hq.Before = ref.ID
		}
	}
	for k, v := range body.Metadata {
		switch k {
		case "source":
			src, ok := v.(string)
			if !ok {
				return unprocessable("metadata.source must be a string")
			}
			hq.Source = src
		case "step":
			f, ok := v.(float64)
			if !ok {
				return unprocessable("metadata.step must be a number")
			}
			step := int(f)
			hq.Step = &step
		default:
			return unprocessable("history is filtered by metadata source and step only, not %q", cut(k, 32))
		}
	}
	t, err := s.m.Thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	list, err := s.m.History(r.Context(), s.graphOf(t), t.ID, hq)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, st := range list {
		out = append(out, stateJSON(st))
	}
	return writeJSON(w, http.StatusOK, out)
}
