package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// remoteTool is one of a server's tools as a Trellis tool.
type remoteTool struct {
	ts     *Toolset
	def    model.ToolDefinition
	meta   tool.Metadata
	mcp    *sdk.Tool
	schema *tool.Schema
}

// anyObject is the schema used to validate the arguments of a tool whose own
// schema does not compile here: the server still validates them.
var anyObject = sync.OnceValue(func() *tool.Schema {
	return tool.MustCompileSchema(json.RawMessage(`{"type":"object"}`))
})

// newRemoteTool builds the Trellis tool for t.
func newRemoteTool(ts *Toolset, t *sdk.Tool) (*remoteTool, error) {
	raw, err := marshalSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %s: tool %s: input schema: %w", quote(ts.name), quote(t.Name), err)
	}
	in, usable := objectSchema(raw)
	out, err := marshalSchema(t.OutputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %s: tool %s: output schema: %w", quote(ts.name), quote(t.Name), err)
	}
	description := t.Description
	if description == "" {
		description = t.Title
	}
	if description == "" && t.Annotations != nil {
		description = t.Annotations.Title
	}
	schema := anyObject()
	if usable {
		if s, err := tool.CompileSchema(in); err == nil {
			schema = s
		}
	}
	return &remoteTool{
		ts:     ts,
		def:    model.ToolDefinition{Name: t.Name, Description: description, InputSchema: in, OutputSchema: out},
		meta:   Metadata(t.Annotations),
		mcp:    t,
		schema: schema,
	}, nil
}

// objectSchema returns the input schema the model is given for a server's
// schema raw: models take only object schemas. A schema without "type"
// gets "type":"object" (arguments are always an object), and one whose type
// list includes "object" is narrowed to it. No schema, a boolean schema, or
// one that cannot describe an object becomes {"type":"object"}; usable is
// then false, and validation is left to the server.
func objectSchema(raw json.RawMessage) (schema json.RawMessage, usable bool) {
	anyObject := json.RawMessage(`{"type":"object"}`)
	var fields map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &fields) != nil || fields == nil {
		return anyObject, false
	}
	if typ, ok := fields["type"]; ok {
		var one string
		var list []string
		switch {
		case json.Unmarshal(typ, &one) == nil:
			if one != "object" {
				return anyObject, false
			}
			return raw, true
		case json.Unmarshal(typ, &list) == nil && slices.Contains(list, "object"):
		default:
			return anyObject, false
		}
	}
	fields["type"] = json.RawMessage(`"object"`)
	out, err := json.Marshal(fields)
	if err != nil {
		return anyObject, false
	}
	return out, true
}

// marshalSchema returns a schema the client decoded as JSON text, or nil for
// none.
func marshalSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	return raw, nil
}

// Metadata maps the hints a server gives about a tool onto Trellis metadata.
// Only explicit hints count: readOnlyHint true sets ReadOnly,
// destructiveHint true sets Destructive, openWorldHint true sets OpenWorld.
// A hint the server left out stays false, although MCP reads a missing
// destructiveHint or openWorldHint as true; a policy that must follow MCP's
// defaults should treat tools that are not read-only with care.
// idempotentHint has no Trellis counterpart, and no hint makes a tool
// concurrency-safe.
func Metadata(a *sdk.ToolAnnotations) tool.Metadata {
	if a == nil {
		return tool.Metadata{}
	}
	return tool.Metadata{
		ReadOnly:    a.ReadOnlyHint,
		Destructive: a.DestructiveHint != nil && *a.DestructiveHint,
		OpenWorld:   a.OpenWorldHint != nil && *a.OpenWorldHint,
	}
}

// Definition returns the tool's name, description and the server's schemas.
func (t *remoteTool) Definition() model.ToolDefinition { return t.def }

// Metadata returns the metadata mapped from the server's hints.
func (t *remoteTool) Metadata() tool.Metadata { return t.meta }

// Title returns the title the server gives the tool (its title, else its
// annotations' title), for user interfaces.
func (t *remoteTool) Title() string {
	if t.mcp.Title == "" && t.mcp.Annotations != nil {
		return t.mcp.Annotations.Title
	}
	return t.mcp.Title
}

// CompiledSchema returns the server's input schema, compiled when the tool
// was listed; a schema that does not compile here, or that cannot describe
// an object, is replaced by "any object", leaving validation to the server.
func (t *remoteTool) CompiledSchema() *tool.Schema { return t.schema }

// MCPTool returns the tool as the server listed it.
func (t *remoteTool) MCPTool() *sdk.Tool { return t.mcp }

// Server returns the name of the server the tool belongs to.
func (t *remoteTool) Server() string { return t.ts.name }

// Call forwards the call to the server. The server's answer becomes the
// result (see Result); a tool that reports an error gives an error result.
// A request that got no answer gives an error result with code
// CodeUnavailable whose Err is a *CallError; a request the server refused,
// or answered with a result this client cannot read, one with code
// CodeProtocol; a request the header function refused, or that the server
// redirected where the toolset does not follow, one with code CodeRefused.
// Error results name the server and the tool. The end of ctx is returned as
// an error, which Invoke turns into a timeout or cancelled result.
func (t *remoteTool) Call(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
	name := t.def.Name
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	if !json.Valid(args) {
		return tool.ErrorResult(tool.CodeInvalidArguments,
			fmt.Errorf("%w: tool %s: the arguments are not valid JSON", tool.ErrInvalidArguments, quote(name))), nil
	}
	if d := t.ts.cfg.CallTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	c, cctx, done := t.ts.startCall(ctx, name)
	defer done()
	var res *sdk.CallToolResult
	err := t.ts.do(cctx, "call "+name, func(ctx context.Context, s *session) error {
		// The token lets a server relate the requests it sends while
		// serving the call to it (see callOf).
		p := &sdk.CallToolParams{Name: name, Arguments: args, Meta: sdk.Meta{relatedCallMeta: c.token}}
		if lvl := t.ts.o.logLevel; lvl != "" {
			// Protocol 2026-07-28 takes the level per request.
			p.Meta[sdk.MetaKeyLogLevel] = string(lvl)
		}
		r, err := s.cs.CallTool(ctx, p)
		res = r
		return err
	})
	if perr := c.pausedErr(); perr != nil {
		// A handler of the server's elicitation or sampling request paused
		// the run: the call runs again when the run is resumed.
		return tool.Result{}, perr
	}
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, err
		}
		if errors.Is(err, ErrHeaderRefused) || errors.Is(err, ErrURLRefused) {
			return tool.ErrorResult(CodeRefused, err), nil
		}
		if _, ok := errors.AsType[*CallError](err); ok || errors.Is(err, ErrClosed) || errors.Is(err, ErrConnect) {
			return tool.ErrorResult(CodeUnavailable, err), nil
		}
		return tool.ErrorResult(CodeProtocol, err), nil
	}
	return Result(t.ts.name, name, res), nil
}
