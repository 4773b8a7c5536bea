package server

import (
	"net/http"

	"github.com/trellis-go/trellis/runs"
)

// Crons are runs.Manager schedules: a cron's runs start with the request
// it was created with, on its schedule (five cron fields or a descriptor
// such as "@hourly", in UTC).
func (s *Server) cronRoutes() {
	s.route("POST /runs/crons", func(w http.ResponseWriter, r *http.Request) error { return s.createCron(w, r, "") })
	s.route("POST /threads/{thread}/runs/crons", func(w http.ResponseWriter, r *http.Request) error {
		return s.createCron(w, r, r.PathValue("thread"))
	})
	s.route("POST /runs/crons/search", s.searchCrons)
	s.route("DELETE /runs/crons/{cron}", func(w http.ResponseWriter, r *http.Request) error {
		if err := s.m.Unschedule(r.Context(), r.PathValue("cron")); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func cronJSON(c runs.Cron) map[string]any {
	run := runs.Run{Graph: c.Request.Graph, Metadata: c.Request.Metadata}
	k := kwargsOf(run)
	var thread any
	if c.Request.Thread != "" {
		thread = c.Request.Thread
	}
	meta := map[string]any{}
	for key, v := range c.Request.Metadata {
		if key != serverKey {
			meta[key] = v
		}
	}
	return map[string]any{
		"cron_id": c.ID, "assistant_id": k.Assistant, "thread_id": thread, "schedule": c.Schedule,
		"created_at": timeJSON(c.CreatedAt), "updated_at": timeJSON(c.CreatedAt), "next_run_date": timeJSON(c.Next),
		"end_time": nil, "user_id": nil, "timezone": "UTC", "enabled": true, "metadata": meta,
		"payload": map[string]any{"input": c.Request.Input, "stream_mode": k.StreamMode},
	}
}

func (s *Server) createCron(w http.ResponseWriter, r *http.Request, thread string) error {
	var body struct {
		runCreate
		Schedule string `json:"schedule"`
		Timezone string `json:"timezone"`
		EndTime  string `json:"end_time"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Schedule == "" {
		return unprocessable("schedule is missing")
	}
	if body.Timezone != "" && body.Timezone != "UTC" {
		return unprocessable("timezone %q is not supported: schedules are in UTC", cut(body.Timezone, 32))
	}
	if body.EndTime != "" {
		return unprocessable("end_time is not supported: delete the cron instead")
	}
	if body.Command != nil {
		return unprocessable("a cron's runs start anew: command is not supported")
	}
	if thread != "" {
		if _, err := s.m.Thread(r.Context(), thread); err != nil {
			return err
		}
		if body.MultitaskStrategy == "" {
			body.MultitaskStrategy = string(runs.StrategyEnqueue)
		}
	}
	req, _, err := s.request(r.Context(), thread, &body.runCreate)
	if err != nil {
		return err
	}
	c, err := s.m.Schedule(r.Context(), body.Schedule, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, cronJSON(c))
}

func (s *Server) searchCrons(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		AssistantID string `json:"assistant_id"`
		ThreadID    string `json:"thread_id"`
		Limit       *int   `json:"limit"`
		Offset      int    `json:"offset"`
	}
	if err := decode(r, &q); err != nil {
		return err
	}
	limit, err := limitOf(q.Limit)
	if err != nil {
		return err
	}
	if q.Offset < 0 {
		return unprocessable("offset %d is negative", q.Offset)
	}
	list, err := s.m.Crons(r.Context())
	if err != nil {
		return err
	}
	out := []map[string]any{}
	skip := q.Offset
	for _, c := range list {
		j := cronJSON(c)
		if q.AssistantID != "" && j["assistant_id"] != q.AssistantID || q.ThreadID != "" && c.Request.Thread != q.ThreadID {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, j)
	}
	return writeJSON(w, http.StatusOK, out)
}
