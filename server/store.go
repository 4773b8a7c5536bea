package server

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/store"
)

// WithStore serves the store endpoints (/store/items, /store/items/search,
// /store/namespaces) from st. Items are the authenticated owner's
// (WithAuth): each owner sees a store of its own, and another owner's
// namespaces are not listed. Without WithStore those endpoints answer 501.
func WithStore(st store.Store) Option { return func(s *Server) { s.store = st } }

// maxStoreLimit bounds a page of items or namespaces.
const maxStoreLimit = 1000

// storeItemJSON is an item as the API sends it.
type storeItemJSON struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Score     *float64        `json:"score,omitempty"`
}

// storePutBody is the body of PUT /store/items.
type storePutBody struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	// Index is false (do not embed), or the fields to embed.
	Index json.RawMessage `json:"index"`
	// TTL is in minutes.
	TTL *float64 `json:"ttl"`
}

// storeKeyBody is the body of DELETE /store/items.
type storeKeyBody struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
}

// storeSearchBody is the body of POST /store/items/search.
type storeSearchBody struct {
	Prefix []string                   `json:"namespace_prefix"`
	Filter map[string]json.RawMessage `json:"filter"`
	Limit  *int                       `json:"limit"`
	Offset int                        `json:"offset"`
	Query  string                     `json:"query"`
}

// storeNamespacesBody is the body of POST /store/namespaces.
type storeNamespacesBody struct {
	Prefix   []string `json:"prefix"`
	Suffix   []string `json:"suffix"`
	MaxDepth int      `json:"max_depth"`
	Limit    *int     `json:"limit"`
	Offset   int      `json:"offset"`
}

func (s *Server) storeRoutes() {
	if s.store == nil {
		none := func(w http.ResponseWriter, r *http.Request) error {
			return &apiError{status: http.StatusNotImplemented, msg: "this server has no store (server.WithStore)"}
		}
		for _, p := range []string{"PUT /store/items", "GET /store/items", "DELETE /store/items", "POST /store/items/search", "POST /store/namespaces"} {
			s.route(p, none)
		}
		return
	}
	s.route("PUT /store/items", s.putItem)
	s.route("GET /store/items", s.getItem)
	s.route("DELETE /store/items", s.deleteItem)
	s.route("POST /store/items/search", s.searchItems)
	s.route("POST /store/namespaces", s.listNamespaces)
}

// ownerLabel is the first label of every namespace of owner's items: each
// owner has a tree of its own.
func ownerLabel(r *http.Request) string { return "owner:" + runs.OwnerOf(r.Context()) }

// checkNamespace checks a namespace a client sent, as the API's clients
// expect: required, no empty label, no period in a label.
func checkNamespace(what string, ns []string, required bool) error {
	if len(ns) == 0 {
		if required {
			return badRequest("%s is required", what)
		}
		return nil
	}
	for i, l := range ns {
		if l == "" || strings.Contains(l, ".") {
			return unprocessable("%s[%d] %q: namespace labels cannot be empty or contain periods", what, i, cut(l, 100))
		}
	}
	if err := store.ValidatePrefix(ns); err != nil {
		return unprocessable("%s: %v", what, err)
	}
	return nil
}

func (s *Server) scoped(r *http.Request, ns []string) []string {
	return append([]string{ownerLabel(r)}, ns...)
}

func itemJSON(it store.Item, scored bool) storeItemJSON {
	out := storeItemJSON{Namespace: it.Namespace[1:], Key: it.Key, Value: it.Value, CreatedAt: it.CreatedAt.UTC(), UpdatedAt: it.UpdatedAt.UTC()}
	if scored {
		out.Score = &it.Score
	}
	return out
}

// storeError turns a store's error into the client's answer.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrInvalid):
		return unprocessable("%s", strings.TrimPrefix(err.Error(), "store: "))
	case errors.Is(err, store.ErrNoEmbedder):
		return unprocessable("this store cannot search by meaning: it has no embedder; search with a filter instead")
	case errors.Is(err, store.ErrConflict):
		return &apiError{status: http.StatusConflict, msg: "the item changed meanwhile"}
	}
	return err
}

func (s *Server) putItem(w http.ResponseWriter, r *http.Request) error {
	var body storePutBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if err := checkNamespace("namespace", body.Namespace, true); err != nil {
		return err
	}
	if body.Key == "" {
		return badRequest("key is required")
	}
	v := strings.TrimSpace(string(body.Value))
	if v == "" || v[0] != '{' {
		return unprocessable("value must be a JSON object")
	}
	var opts []store.PutOption
	switch idx := strings.TrimSpace(string(body.Index)); {
	case idx == "" || idx == "null" || idx == "true":
	case idx == "false":
		opts = append(opts, store.WithIndexFields())
	default:
		var fields []string
		if err := json.Unmarshal(body.Index, &fields); err != nil {
			return unprocessable("index must be false or a list of field paths")
		}
		opts = append(opts, store.WithIndexFields(fields...))
	}
	if body.TTL != nil {
		if *body.TTL <= 0 {
			return unprocessable("ttl is in minutes and must be positive, got %v", *body.TTL)
		}
		opts = append(opts, store.WithTTL(time.Duration(*body.TTL*float64(time.Minute))))
	}
	if _, err := s.store.Put(r.Context(), s.scoped(r, body.Namespace), body.Key, body.Value, opts...); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) getItem(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	key := q.Get("key")
	if key == "" {
		return badRequest("the key query parameter is required")
	}
	var ns []string
	if raw := q.Get("namespace"); raw != "" {
		ns = strings.Split(raw, ".")
	}
	if err := checkNamespace("namespace", ns, true); err != nil {
		return err
	}
	it, err := s.store.Get(r.Context(), s.scoped(r, ns), key)
	if errors.Is(err, store.ErrNotFound) {
		// The API's clients read a missing item as null.
		return writeJSON(w, http.StatusOK, nil)
	}
	if err != nil {
		return storeError(err)
	}
	return writeJSON(w, http.StatusOK, itemJSON(it, false))
}

func (s *Server) deleteItem(w http.ResponseWriter, r *http.Request) error {
	var body storeKeyBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if err := checkNamespace("namespace", body.Namespace, true); err != nil {
		return err
	}
	if body.Key == "" {
		return badRequest("key is required")
	}
	if err := s.store.Delete(r.Context(), s.scoped(r, body.Namespace), body.Key); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// filterConds turns the API's filter (field: value for equality, or
// field: {"$op": value} with $eq, $ne, $gt, $gte, $lt, $lte) into the
// store's conditions.
func filterConds(filter map[string]json.RawMessage) ([]store.Cond, error) {
	ops := map[string]store.Operator{"$eq": store.OpEq, "$ne": store.OpNe, "$gt": store.OpGt, "$gte": store.OpGte, "$lt": store.OpLt, "$lte": store.OpLte}
	var conds []store.Cond
	for _, field := range slices.Sorted(maps.Keys(filter)) {
		raw := filter[field]
		var byOp map[string]json.RawMessage
		if json.Unmarshal(raw, &byOp) == nil && len(byOp) > 0 && isOperators(byOp) {
			for name, v := range byOp {
				op, ok := ops[name]
				if !ok {
					return nil, unprocessable("filter.%s: unknown operator %q (use $eq, $ne, $gt, $gte, $lt, $lte)", cut(field, 100), cut(name, 20))
				}
				var val any
				if err := json.Unmarshal(v, &val); err != nil {
					return nil, unprocessable("filter.%s.%s: %v", cut(field, 100), name, err)
				}
				conds = append(conds, store.Cond{Path: field, Op: op, Value: val})
			}
			continue
		}
		var val any
		if err := json.Unmarshal(raw, &val); err != nil {
			return nil, unprocessable("filter.%s: %v", cut(field, 100), err)
		}
		conds = append(conds, store.Eq(field, val))
	}
	return conds, nil
}

// isOperators reports whether every key of m names an operator.
func isOperators(m map[string]json.RawMessage) bool {
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return false
		}
	}
	return true
}

func pageLimit(limit *int, def int) (int, error) {
	if limit == nil {
		return def, nil
	}
	if *limit < 1 || *limit > maxStoreLimit {
		return 0, unprocessable("limit must be between 1 and %d, got %d", maxStoreLimit, *limit)
	}
	return *limit, nil
}

func (s *Server) searchItems(w http.ResponseWriter, r *http.Request) error {
	var body storeSearchBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if err := checkNamespace("namespace_prefix", body.Prefix, false); err != nil {
		return err
	}
	limit, err := pageLimit(body.Limit, store.DefaultLimit)
	if err != nil {
		return err
	}
	if body.Offset < 0 {
		return unprocessable("offset must not be negative, got %d", body.Offset)
	}
	conds, err := filterConds(body.Filter)
	if err != nil {
		return err
	}
	items, err := s.store.Search(r.Context(), s.scoped(r, body.Prefix), store.Query{Text: body.Query, Filter: conds, Limit: limit, Offset: body.Offset})
	if err != nil {
		return storeError(err)
	}
	out := make([]storeItemJSON, len(items))
	for i, it := range items {
		out[i] = itemJSON(it, body.Query != "")
	}
	return writeJSON(w, http.StatusOK, map[string]any{"items": out})
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	var body storeNamespacesBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if err := checkNamespace("prefix", body.Prefix, false); err != nil {
		return err
	}
	if err := checkNamespace("suffix", body.Suffix, false); err != nil {
		return err
	}
	limit, err := pageLimit(body.Limit, 100)
	if err != nil {
		return err
	}
	if body.Offset < 0 || body.MaxDepth < 0 {
		return unprocessable("offset and max_depth must not be negative")
	}
	q := store.NamespaceQuery{Prefix: s.scoped(r, body.Prefix), Limit: limit, Offset: body.Offset}
	if body.MaxDepth > 0 {
		q.MaxDepth = body.MaxDepth + 1 // the owner's label comes first
	}
	if len(body.Suffix) > 0 {
		// The store pages by prefix only: a suffix is matched here, over
		// at most maxStoreLimit namespaces.
		q.Limit, q.Offset = maxStoreLimit, 0
	}
	found, err := s.store.ListNamespaces(r.Context(), q)
	if err != nil {
		return storeError(err)
	}
	out := make([][]string, 0, len(found))
	for _, ns := range found {
		ns = ns[1:]
		if len(body.Suffix) > 0 && (len(ns) < len(body.Suffix) || !slices.Equal(ns[len(ns)-len(body.Suffix):], body.Suffix)) {
			continue
		}
		out = append(out, ns)
	}
	if len(body.Suffix) > 0 {
		start := min(body.Offset, len(out))
		out = out[start : start+min(limit, len(out)-start)]
	}
	return writeJSON(w, http.StatusOK, map[string]any{"namespaces": out})
}
