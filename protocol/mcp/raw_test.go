package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// rawServer is an MCP server written at the JSON-RPC level, so that tests
// can send what the go-sdk server would refuse to: odd schemas, duplicate
// tool names, results as raw JSON.
type rawServer struct {
	// tools is the JSON array tools/list answers with.
	tools string
	// call answers tools/call with a raw result, or a JSON-RPC error.
	call func(name string, args json.RawMessage) (json.RawMessage, error)

	wg sync.WaitGroup
}

// transport returns the option that connects each session to s in memory.
func (s *rawServer) transport() Option {
	return WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		conn, err := server.Connect(ctx)
		if err != nil {
			return nil, err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.serve(conn)
		}()
		return client, nil
	})
}

func (s *rawServer) serve(conn sdk.Connection) {
	ctx := context.Background()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.ID.IsValid() {
			continue // responses and notifications
		}
		var result any
		var rerr error
		switch req.Method {
		case "initialize":
			result = map[string]any{
				"protocolVersion": "2025-06-18",
				"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
				"serverInfo":      map[string]any{"name": "raw", "version": "v0"},
			}
		case "tools/list":
			result = json.RawMessage(`{"tools":` + s.tools + `}`)
		case "tools/call":
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(req.Params, &p); err != nil {
				rerr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
				break
			}
			if s.call == nil {
				rerr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no tools to call"}
				break
			}
			raw, err := s.call(p.Name, p.Arguments)
			if err != nil {
				var we *jsonrpc.Error
				if !errors.As(err, &we) {
					we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
				}
				rerr = we
				break
			}
			result = raw
		default:
			rerr = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method}
		}
		resp := &jsonrpc.Response{ID: req.ID, Error: rerr}
		if rerr == nil {
			raw, err := json.Marshal(result)
			if err != nil {
				panic(err)
			}
			resp.Result = raw
		}
		if conn.Write(ctx, resp) != nil {
			return
		}
	}
}

// rawToolset is a toolset over s, closed (and s's sessions waited for) when
// the test ends.
func rawToolset(t testing.TB, s *rawServer, opts ...Option) *Toolset {
	t.Helper()
	ts, err := New(Config{Name: "raw"}, append([]Option{s.transport()}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = ts.Close()
		s.wg.Wait()
	})
	return ts
}
