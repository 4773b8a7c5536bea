package mcp

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
)

func TestToolsetUnreadableAnswerIsNotLost(t *testing.T) {
	// The server answers, but with content this client cannot read: the
	// session is alive, so the call must be neither repeated on new
	// sessions nor reported as a lost connection.
	var calls atomic.Int32
	s := &rawServer{
		tools: `[{"name":"odd","inputSchema":{"type":"object"}}]`,
		call: func(string, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return json.RawMessage(`{"content":[{"type":"hologram","uri":"x"}]}`), nil
		},
	}
	ts := rawToolset(t, s, WithReconnectDelay(time.Millisecond))
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	r := call(ctx, find(t, tools, "odd"), `{}`)
	require.True(t, r.IsError)
	assert.Equal(t, int32(1), calls.Load(), "the tool ran once")
	assert.Equal(t, 1, ts.sessions(), "no reconnection")
	assert.Equal(t, CodeProtocol, r.ErrorCode, r.Text())
	assert.NotErrorIs(t, r.Err, ErrTransport)
	assert.Contains(t, r.Text(), `server "raw"`)
	assert.Contains(t, r.Text(), "call odd")
	assert.Contains(t, r.Text(), "hologram")

	// The session still serves requests.
	_, err = ts.Tools(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, ts.sessions())
}

func TestToolsetOddInputSchemas(t *testing.T) {
	s := &rawServer{
		tools: `[
			{"name":"missing"},
			{"name":"null","inputSchema":null},
			{"name":"true","inputSchema":true},
			{"name":"false","inputSchema":false},
			{"name":"empty","inputSchema":{}},
			{"name":"untyped","inputSchema":{"properties":{"q":{"type":"string"}},"required":["q"]}},
			{"name":"typelist","inputSchema":{"type":["object","null"],"properties":{"q":{"type":"string"}}}},
			{"name":"string","inputSchema":{"type":"string"}},
			{"name":"ref","inputSchema":{"$ref":"#/$defs/in","$defs":{"in":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}},
			{"name":"remote","inputSchema":{"type":"object","properties":{"x":{"$ref":"https://schemas.invalid/x.json"}}}}
		]`,
		call: func(name string, args json.RawMessage) (json.RawMessage, error) {
			text, _ := json.Marshal(name + " " + string(args))
			return json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}]}`), nil
		},
	}
	ts := rawToolset(t, s)
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err, "odd schemas do not break the listing")
	require.ElementsMatch(t, []string{"missing", "null", "true", "false", "empty", "untyped", "typelist", "string", "ref", "remote"}, names(tools))

	for _, x := range tools {
		def := x.Definition()
		var schema map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(def.InputSchema, &schema), "%s: %s", def.Name, def.InputSchema)
		assert.JSONEq(t, `"object"`, string(schema["type"]), "%s: an object schema for the model: %s", def.Name, def.InputSchema)
	}
	// What the server described is kept.
	assert.JSONEq(t, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`,
		string(find(t, tools, "untyped").Definition().InputSchema))
	assert.JSONEq(t, `{"type":"object","properties":{"q":{"type":"string"}}}`,
		string(find(t, tools, "typelist").Definition().InputSchema))

	// Arguments are still validated where the schema says something.
	r := call(ctx, find(t, tools, "untyped"), `{}`)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, r.Text())
	r = call(ctx, find(t, tools, "ref"), `{}`)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, r.Text())
	r = call(ctx, find(t, tools, "ref"), `{"n":"3"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, `ref {"n":3}`, r.Text())

	// A schema that cannot describe an object leaves validation to the
	// server instead of refusing every call here.
	for _, name := range []string{"true", "false", "string", "remote", "empty", "missing"} {
		r := call(ctx, find(t, tools, name), `{"x":1}`)
		require.False(t, r.IsError, "%s: %s", name, r.Text())
		assert.Equal(t, name+` {"x":1}`, r.Text())
	}
}

func TestToolsetDuplicateToolNames(t *testing.T) {
	s := &rawServer{tools: `[
		{"name":"search","description":"first","inputSchema":{"type":"object"}},
		{"name":"other","inputSchema":{"type":"object"}},
		{"name":"search","description":"second","inputSchema":{"type":"object"}}
	]`}
	ts := rawToolset(t, s)
	tools, err := ts.Tools(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "other"}, names(tools), "each name once, in the server's order")
	assert.Equal(t, "first", find(t, tools, "search").Definition().Description)
}

func TestToolsetErrorsNameServer(t *testing.T) {
	s := &rawServer{
		tools: `[{"name":"t","inputSchema":{"type":"object"}}]`,
		call: func(string, json.RawMessage) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad params"}
		},
	}
	ts := rawToolset(t, s)
	ctx := ctxT(t, 10*time.Second)
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)

	r := call(ctx, tools[0], `{}`)
	assert.Equal(t, CodeProtocol, r.ErrorCode)
	assert.Contains(t, r.Text(), `server "raw"`)
	assert.Contains(t, r.Text(), "bad params")

	// A listing the client cannot read names the server.
	ts2 := rawToolset(t, &rawServer{tools: `"not a list"`})
	_, err = ts2.Tools(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server "raw"`)

	// So does a call on a closed toolset, which matches ErrClosed.
	require.NoError(t, ts.Close())
	r = call(ctx, tools[0], `{}`)
	assert.Equal(t, CodeUnavailable, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrClosed)
	assert.Contains(t, r.Text(), `server "raw"`)
	assert.Contains(t, r.Text(), "call t")
	_, err = ts.Tools(ctx)
	assert.ErrorIs(t, err, ErrClosed)
	assert.Contains(t, err.Error(), `server "raw"`)
	err = ts.Init(ctx)
	assert.ErrorIs(t, err, ErrClosed)
	assert.Contains(t, err.Error(), `server "raw"`)
}
