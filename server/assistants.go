package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/trellis-go/trellis/runs"
)

func (s *Server) assistantRoutes() {
	s.route("POST /assistants/search", s.searchAssistants)
	s.route("POST /assistants/count", s.countAssistants)
	s.route("GET /assistants/{id}", func(w http.ResponseWriter, r *http.Request) error {
		a, err := s.assistant(r.PathValue("id"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, assistantJSON(a))
	})
	s.route("POST /assistants/{id}/versions", func(w http.ResponseWriter, r *http.Request) error {
		a, err := s.assistant(r.PathValue("id"))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, []map[string]any{assistantJSON(a)})
	})
	s.route("GET /assistants/{id}/schemas", s.assistantSchemas)
	s.route("GET /assistants/{id}/graph", s.assistantGraph)
	s.route("GET /assistants/{id}/subgraphs", s.assistantSubgraphs)
	s.route("GET /assistants/{id}/subgraphs/{ns}", s.assistantSubgraphs)
	fixed := func(w http.ResponseWriter, r *http.Request) error {
		return &apiError{status: http.StatusMethodNotAllowed,
			msg: "assistants are configured in the service's code (server.WithAssistant); they are not created, changed or deleted over HTTP"}
	}
	s.route("POST /assistants", fixed)
	s.route("PATCH /assistants/{id}", fixed)
	s.route("DELETE /assistants/{id}", fixed)
	s.route("POST /assistants/{id}/latest", fixed)
}

func assistantJSON(a Assistant) map[string]any {
	cfg := a.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	meta := a.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	ctx := a.Context
	if ctx == nil {
		ctx = map[string]any{}
	}
	return map[string]any{
		"assistant_id": a.ID, "graph_id": a.Graph, "name": a.Name, "description": a.Description,
		"config": cfg, "context": ctx, "metadata": meta, "version": 1,
		"created_at": timeJSON(a.CreatedAt), "updated_at": timeJSON(a.CreatedAt),
	}
}

type assistantQuery struct {
	GraphID  string         `json:"graph_id"`
	Name     string         `json:"name"`
	Metadata map[string]any `json:"metadata"`
	Limit    *int           `json:"limit"`
	Offset   int            `json:"offset"`
	Select   []string       `json:"select"`
}

func (s *Server) matchAssistants(r *http.Request) ([]Assistant, assistantQuery, error) {
	var q assistantQuery
	if err := decode(r, &q); err != nil {
		return nil, q, err
	}
	var out []Assistant
	for _, a := range s.sortedAssistants() {
		if q.GraphID != "" && a.Graph != q.GraphID || q.Name != "" && !strings.Contains(a.Name, q.Name) || !containsAll(a.Metadata, q.Metadata) {
			continue
		}
		out = append(out, a)
	}
	return out, q, nil
}

func (s *Server) searchAssistants(w http.ResponseWriter, r *http.Request) error {
	list, q, err := s.matchAssistants(r)
	if err != nil {
		return err
	}
	limit, err := limitOf(q.Limit)
	if err != nil {
		return err
	}
	if q.Offset < 0 {
		return unprocessable("offset %d is negative", q.Offset)
	}
	out := []map[string]any{}
	for i := q.Offset; i < len(list) && len(out) < limit; i++ {
		out = append(out, selectKeys(assistantJSON(list[i]), q.Select))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) countAssistants(w http.ResponseWriter, r *http.Request) error {
	list, _, err := s.matchAssistants(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, len(list))
}

func (s *Server) assistantSchemas(w http.ResponseWriter, r *http.Request) error {
	a, err := s.assistant(r.PathValue("id"))
	if err != nil {
		return err
	}
	info, err := s.m.GraphInfo(a.Graph)
	if err != nil {
		return err
	}
	var st map[string]any
	if err := json.Unmarshal(info.StateSchema, &st); err != nil {
		st = map[string]any{"type": "object"}
	}
	// Input is a partial state: no field is required.
	in := map[string]any{}
	for k, v := range st {
		if k != "required" {
			in[k] = v
		}
	}
	cfg := map[string]any{"type": "object", "properties": map[string]any{
		"recursion_limit": map[string]any{"type": "integer", "description": "the run's superstep limit"},
	}}
	return writeJSON(w, http.StatusOK, map[string]any{
		"graph_id": a.Graph, "input_schema": in, "output_schema": st, "state_schema": st,
		"config_schema": cfg, "context_schema": nil,
	})
}

func (s *Server) assistantSubgraphs(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.assistant(r.PathValue("id")); err != nil {
		return err
	}
	// Subgraphs are drawn inside their nodes (the graph endpoint's
	// Mermaid); they are not listed separately.
	return writeJSON(w, http.StatusOK, map[string]any{})
}

func (s *Server) assistantGraph(w http.ResponseWriter, r *http.Request) error {
	a, err := s.assistant(r.PathValue("id"))
	if err != nil {
		return err
	}
	info, err := s.m.GraphInfo(a.Graph)
	if err != nil {
		return err
	}
	g := drawable(info)
	if f := r.URL.Query().Get("format"); f == "mermaid" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(info.Mermaid))
		return nil
	}
	return writeJSON(w, http.StatusOK, g)
}

// drawableGraph is the drawable form of a graph the API serves: nodes and
// edges, and, beyond the reference API, the Mermaid chart.
type drawableGraph struct {
	Nodes   []drawNode `json:"nodes"`
	Edges   []drawEdge `json:"edges"`
	Mermaid string     `json:"mermaid"`
}

type drawNode struct {
	ID   string         `json:"id"`
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

type drawEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Data        string `json:"data,omitempty"`
	Conditional bool   `json:"conditional,omitempty"`
}

var (
	mermaidNode     = regexp.MustCompile(`^(\S+)\("(.*)"\)$`)
	mermaidSubgraph = regexp.MustCompile(`^subgraph (\S+) \["(.*)"\]$`)
	mermaidTerminal = regexp.MustCompile(`^(\S+)\(\[(start|end)\]\):::`)
	mermaidEdge     = regexp.MustCompile(`^(\S+) (-->|-\.->|==>)(?:\|"?(.*?)"?\|)? (\S+)$`)
)

// drawable reads a graph's Mermaid chart (graph.Graph.Mermaid, the engine's
// only public drawing of a graph) into nodes and edges. The chart lists the
// top-level nodes in the order Nodes does, one line each (a subgraph's
// block counts as its node), and names them by identifiers that the order
// maps back to node names; lines inside a subgraph's block are skipped.
func drawable(info runs.GraphInfo) drawableGraph {
	g := drawableGraph{Nodes: []drawNode{}, Edges: []drawEdge{}, Mermaid: info.Mermaid}
	ids := map[string]string{}
	next := 0
	name := func(id string) string {
		if n, ok := ids[id]; ok {
			return n
		}
		return id
	}
	for _, raw := range strings.Split(info.Mermaid, "\n") {
		depth := len(raw) - len(strings.TrimLeft(raw, "\t"))
		line := strings.TrimSpace(raw)
		if depth != 1 || line == "" {
			continue
		}
		if m := mermaidTerminal.FindStringSubmatch(line); m != nil {
			n := "__" + m[2] + "__"
			ids[m[1]] = n
			g.Nodes = append(g.Nodes, drawNode{ID: n, Type: "schema", Data: map[string]any{"name": n}})
			continue
		}
		var id, label string
		if m := mermaidSubgraph.FindStringSubmatch(line); m != nil {
			id, label = m[1], m[2]
		} else if m := mermaidNode.FindStringSubmatch(line); m != nil {
			id, label = m[1], m[2]
		}
		if id != "" {
			n := label
			if next < len(info.Nodes) {
				n = info.Nodes[next]
			}
			next++
			ids[id] = n
			g.Nodes = append(g.Nodes, drawNode{ID: n, Type: "runnable", Data: map[string]any{"id": []string{n}, "name": n}})
			continue
		}
		if m := mermaidEdge.FindStringSubmatch(line); m != nil {
			e := drawEdge{Source: name(m[1]), Target: name(m[4]), Conditional: m[2] != "-->"}
			if m[3] != "" {
				e.Data = strings.NewReplacer("#quot;", `"`, "#lt;", "<", "#gt;", ">").Replace(m[3])
			}
			g.Edges = append(g.Edges, e)
		}
	}
	return g
}

// containsAll reports whether have holds every key of want with an equal
// value, as JSON decodes them.
func containsAll(have, want map[string]any) bool {
	for k, v := range want {
		got, ok := have[k]
		if !ok || !reflect.DeepEqual(normJSON(got), normJSON(v)) {
			return false
		}
	}
	return true
}

func normJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// selectKeys keeps the keys of m that sel names (all of them when sel is
// empty).
func selectKeys(m map[string]any, sel []string) map[string]any {
	if len(sel) == 0 {
		return m
	}
	out := make(map[string]any, len(sel))
	for _, k := range sel {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// limitOf is a listing's limit: 10 when absent, refused when negative or
// over runs.MaxLimit.
func limitOf(p *int) (int, error) {
	switch {
	case p == nil:
		return runs.DefaultLimit, nil
	case *p < 0:
		return 0, unprocessable("limit %d is negative", *p)
	case *p == 0:
		return runs.DefaultLimit, nil
	case *p > runs.MaxLimit:
		return 0, unprocessable("limit %d is over %d", *p, runs.MaxLimit)
	}
	return *p, nil
}
