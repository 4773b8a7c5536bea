package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/internal/arguments"
)

// SetModelResponseName is the default name of the set-model-response tool.
const SetModelResponseName = "set_model_response"

// responseKey names the property that carries a response whose schema is
// not an object schema.
const responseKey = "response"

type responseConfig struct {
	name        string
	description string
	instruction string
}

// ResponseOption configures a set-model-response tool.
type ResponseOption func(*responseConfig)

// WithResponseName sets the tool's name (default "set_model_response").
func WithResponseName(name string) ResponseOption {
	return func(c *responseConfig) { c.name = name }
}

// WithResponseDescription sets the tool's description.
func WithResponseDescription(description string) ResponseOption {
	return func(c *responseConfig) { c.description = description }
}

// WithResponseInstruction replaces the instruction the tool adds to the
// system prompt.
func WithResponseInstruction(text string) ResponseOption {
	return func(c *responseConfig) { c.instruction = text }
}

// SetModelResponseTool turns a schema into structured output for models
// that do not support it natively: the model gives its final answer by
// calling the tool, whose arguments are the answer. The arguments go
// through the usual pipeline (coercion, validation); the result's content
// is one JSON part holding the validated answer, and the result sets
// Terminate, since the final answer ends the run. The tool adds an
// instruction to the system prompt that tells the model to answer this way.
//
// A schema that is not an object schema (an array, a string, ...) is
// wrapped as the property "response" of an object, since tool arguments are
// objects; the result holds the unwrapped value.
type SetModelResponseTool struct {
	core
	wrapped     bool
	instruction string
}

// NewSetModelResponse returns a set-model-response tool whose schema is
// derived from T.
func NewSetModelResponse[T any](opts ...ResponseOption) (*SetModelResponseTool, error) {
	schema, err := arguments.Derive(reflect.TypeFor[T]())
	if err != nil {
		return nil, fmt.Errorf("set model response: %w", err)
	}
	return NewSetModelResponseSchema(schema, opts...)
}

// NewSetModelResponseSchema returns a set-model-response tool for a
// hand-written schema.
func NewSetModelResponseSchema(schema json.RawMessage, opts ...ResponseOption) (*SetModelResponseTool, error) {
	cfg := responseConfig{
		name:        SetModelResponseName,
		description: "Give your final answer. The arguments are the answer itself, following the schema.",
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.instruction == "" {
		cfg.instruction = fmt.Sprintf("When you have the final answer, call the tool %q with the answer as its arguments, following its schema exactly. Do not give the final answer as plain text.", cfg.name)
	}
	var doc map[string]any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, fmt.Errorf("set model response: %w: the schema must be a JSON object: %w", ErrInvalidSchema, err)
	}
	wrapped := false
	if doc["type"] != "object" {
		wrapper := map[string]any{
			"type":                 "object",
			"properties":           map[string]any{responseKey: doc},
			"required":             []string{responseKey},
			"additionalProperties": false,
		}
		for _, k := range [...]string{"$defs", "definitions"} {
			if defs, ok := doc[k]; ok {
				wrapper[k] = defs
				delete(doc, k)
			}
		}
		b, err := json.Marshal(wrapper)
		if err != nil {
			return nil, fmt.Errorf("set model response: %w", err)
		}
		schema, wrapped = b, true
	}
	c, err := newCore(cfg.name, cfg.description, schema, nil)
	if err != nil {
		return nil, fmt.Errorf("set model response: %w", err)
	}
	t := &SetModelResponseTool{core: c, wrapped: wrapped, instruction: cfg.instruction}
	t.bind(t)
	return t, nil
}

// Instruction tells the model to give its final answer through the tool.
func (t *SetModelResponseTool) Instruction() string { return t.instruction }

// Call validates args against the schema and returns the answer.
func (t *SetModelResponseTool) Call(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
	a, aerr := runArguments(t.def.Name, args, t.schema, nil, false, true)
	if aerr != nil {
		return argumentResult(aerr), nil
	}
	return t.callParsed(ctx, callID, a.Value, args)
}

func (t *SetModelResponseTool) self() Tool { return t }

func (t *SetModelResponseTool) callParsed(_ context.Context, _ string, args any, _ json.RawMessage) (Result, error) {
	v := args
	if t.wrapped {
		if m, ok := args.(map[string]any); ok {
			v = m[responseKey]
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: []model.Part{model.JSONPart(raw)}, Status: StatusSuccess, Terminate: true}, nil
}
