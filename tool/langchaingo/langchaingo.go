package langchaingo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/tools"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Input is the argument of a tool FromTool makes: the string the
// langchaingo tool is called with.
type Input struct {
	// Input is what the tool is asked, in the form its description asks for.
	Input string `json:"input" jsonschema_description:"The tool's input, in the form its description asks for."`
}

// FromTool makes the langchaingo tool t a Trellis tool, named and described
// as t is (a name that is not a valid Trellis tool name is an error; see
// tool.Rename to give it another). The model calls it with {"input": "..."};
// the answer is t's text, and t's error an error result the model sees.
// opts are the options of tool.NewFunc (metadata, a permission checker, a
// title).
func FromTool(t tools.Tool, opts ...tool.Option) (tool.Tool, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: langchaingo: the tool is nil", tool.ErrInvalidTool)
	}
	lt := t
	return tool.NewFunc(t.Name(), t.Description(), func(ctx context.Context, in Input) (string, error) {
		return lt.Call(ctx, in.Input)
	}, opts...)
}

// FromTools is FromTool for each of ts, as a static toolset named name.
func FromTools(name string, ts []tools.Tool, opts ...tool.Option) (*tool.Static, error) {
	out := make([]tool.Tool, 0, len(ts))
	for i, t := range ts {
		tt, err := FromTool(t, opts...)
		if err != nil {
			return nil, fmt.Errorf("langchaingo: tool %d: %w", i, err)
		}
		out = append(out, tt)
	}
	return tool.NewStatic(name, out...), nil
}

// ToTool makes the Trellis tool t a langchaingo tool. Its Call reads the
// input as t's JSON arguments when it is a JSON object, and otherwise, when
// t takes exactly one string property, as that property's value; any other
// input is refused with an error that shows the arguments t expects. The
// call goes through tool.Invoke, so its arguments are repaired, checked and
// coerced as a Trellis run's would be. A result that reports an error is
// returned as an error carrying its text; other results as their text.
// The description tells a langchaingo agent the argument schema.
func ToTool(t tool.Tool) (tools.Tool, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: langchaingo: the tool is nil", tool.ErrInvalidTool)
	}
	def := t.Definition()
	a := &adapted{t: t, def: def}
	a.single = singleString(def.InputSchema)
	return a, nil
}

// adapted is a Trellis tool as a langchaingo tool.
type adapted struct {
	t      tool.Tool
	def    model.ToolDefinition
	single string // the one string property, when the schema has just one
}

// Name returns the tool's name.
func (a *adapted) Name() string { return a.def.Name }

// Description returns the tool's description and how to give its input.
func (a *adapted) Description() string {
	var b strings.Builder
	b.WriteString(a.def.Description)
	if a.single != "" {
		fmt.Fprintf(&b, " Input: the %s, as plain text.", a.single)
	} else if len(a.def.InputSchema) > 0 {
		fmt.Fprintf(&b, " Input: a JSON object matching this schema: %s", compact(a.def.InputSchema))
	}
	return strings.TrimSpace(b.String())
}

// ErrInput is matched by the error of a call whose input is neither a JSON
// object nor, for a tool with one string argument, plain text.
var ErrInput = errors.New("langchaingo: the input is not the tool's arguments")

// Call runs the tool with input.
func (a *adapted) Call(ctx context.Context, input string) (string, error) {
	args, err := a.arguments(input)
	if err != nil {
		return "", err
	}
	r := tool.Invoke(ctx, a.t, model.ToolCall{ID: "langchaingo", Name: a.def.Name, Arguments: args})
	if r.IsError {
		return "", fmt.Errorf("%s: %s", a.def.Name, r.Text())
	}
	return r.Text(), nil
}

// arguments reads input as the tool's JSON arguments.
func (a *adapted) arguments(input string) (json.RawMessage, error) {
	trimmed := strings.TrimSpace(input)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed), nil
	}
	if a.single != "" {
		return json.Marshal(map[string]string{a.single: input})
	}
	return nil, fmt.Errorf("%w: %s takes a JSON object matching %s, got %q", ErrInput, a.def.Name, compact(a.def.InputSchema), textcut.Clip(input, 200, "…"))
}

// singleString returns the name of the one property of schema when it is
// an object with exactly one property, of type string; "" otherwise.
func singleString(schema json.RawMessage) string {
	var s struct {
		Type       any `json:"type"`
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) != 1 {
		return ""
	}
	for name, p := range s.Properties {
		if p.Type == "string" {
			return name
		}
	}
	return ""
}

// compact is schema without insignificant space, or as it is when it is
// not JSON.
func compact(schema json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, schema); err != nil {
		return string(schema)
	}
	return b.String()
}
