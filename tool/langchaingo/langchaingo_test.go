package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lctools "github.com/tmc/langchaingo/tools"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/langchaingo"
)

// shout is a langchaingo tool of the test's own.
type shout struct{ fail bool }

func (shout) Name() string        { return "shout" }
func (shout) Description() string { return "Repeats the input in capitals." }
func (s shout) Call(_ context.Context, input string) (string, error) {
	if s.fail {
		return "", errors.New("hoarse")
	}
	return strings.ToUpper(input), nil
}

func TestFromTool(t *testing.T) {
	tt, err := langchaingo.FromTool(shout{})
	require.NoError(t, err)
	def := tt.Definition()
	assert.Equal(t, "shout", def.Name)
	assert.Equal(t, "Repeats the input in capitals.", def.Description)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(def.InputSchema, &schema))
	assert.Equal(t, []any{"input"}, schema["required"])

	r := tool.Invoke(context.Background(), tt, model.ToolCall{ID: "1", Name: "shout", Arguments: []byte(`{"input":"hello"}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "HELLO", r.Text())

	// Arguments are checked before the tool runs.
	r = tool.Invoke(context.Background(), tt, model.ToolCall{ID: "2", Name: "shout", Arguments: []byte(`{"text":"hello"}`)})
	assert.True(t, r.IsError)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode)

	// The tool's error is what the model sees.
	bad, err := langchaingo.FromTool(shout{fail: true})
	require.NoError(t, err)
	r = tool.Invoke(context.Background(), bad, model.ToolCall{ID: "3", Name: "shout", Arguments: []byte(`{"input":"x"}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "hoarse")

	// langchaingo's own calculator.
	calc, err := langchaingo.FromTool(lctools.Calculator{})
	require.NoError(t, err)
	r = tool.Invoke(context.Background(), calc, model.ToolCall{ID: "4", Name: "calculator", Arguments: []byte(`{"input":"6*7"}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "42", r.Text())

	_, err = langchaingo.FromTool(nil)
	require.ErrorIs(t, err, tool.ErrInvalidTool)
}

func TestFromToolsInAnAgent(t *testing.T) {
	set, err := langchaingo.FromTools("langchaingo", []lctools.Tool{shout{}, lctools.Calculator{}})
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(scripted.Call("calculator", `{"input":"2+3"}`), scripted.Call("shout", `{"input":"done"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			var texts []string
			for _, msg := range req.Messages {
				if msg.Role == model.RoleTool {
					texts = append(texts, msg.Text())
				}
			}
			return &model.Response{Message: model.Assistant(strings.Join(texts, " "))}, nil
		}),
	)
	g, err := agent.NewReAct(m, agent.WithToolsets(set))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("add and shout"))
	require.NoError(t, err)
	assert.Equal(t, "5 DONE", agent.FinalText(out.Messages))

	_, err = langchaingo.FromTools("x", []lctools.Tool{shout{}, nil})
	require.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.Contains(t, err.Error(), "tool 1")
}

type cityIn struct {
	City string `json:"city" jsonschema:"minLength=1"`
}

type tripIn struct {
	From string `json:"from"`
	To   string `json:"to"`
	Days int    `json:"days,omitempty"`
}

func TestToTool(t *testing.T) {
	weather := tool.MustFunc("weather", "Weather of a city.", func(_ context.Context, in cityIn) (string, error) {
		return "sunny in " + in.City, nil
	})
	lt, err := langchaingo.ToTool(weather)
	require.NoError(t, err)
	var _ lctools.Tool = lt
	assert.Equal(t, "weather", lt.Name())
	assert.Equal(t, "Weather of a city. Input: the city, as plain text.", lt.Description())

	ctx := context.Background()
	got, err := lt.Call(ctx, "Lima")
	require.NoError(t, err)
	assert.Equal(t, "sunny in Lima", got)
	got, err = lt.Call(ctx, ` {"city":"Oslo"} `)
	require.NoError(t, err)
	assert.Equal(t, "sunny in Oslo", got)
	// An empty city breaks the schema: the error result becomes an error.
	_, err = lt.Call(ctx, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "weather: ")

	trip := tool.MustFunc("trip", "Plans a trip.", func(_ context.Context, in tripIn) (string, error) {
		return in.From + "→" + in.To, nil
	})
	lt, err = langchaingo.ToTool(trip)
	require.NoError(t, err)
	assert.Contains(t, lt.Description(), `Input: a JSON object matching this schema: {`)
	assert.NotContains(t, lt.Description(), "\n")
	got, err = lt.Call(ctx, `{"from":"Lima","to":"Cusco","days":"3"}`)
	require.NoError(t, err, "arguments are coerced as in a run")
	assert.Equal(t, "Lima→Cusco", got)
	_, err = lt.Call(ctx, "Lima to Cusco")
	require.ErrorIs(t, err, langchaingo.ErrInput)
	assert.Contains(t, err.Error(), `trip takes a JSON object matching {`)

	_, err = langchaingo.ToTool(nil)
	require.ErrorIs(t, err, tool.ErrInvalidTool)
}

// FuzzToolInput: whatever a langchaingo agent passes, a call ends with a
// string or an error, never a panic.
func FuzzToolInput(f *testing.F) {
	for _, s := range []string{"Lima", `{"from":"a","to":"b"}`, `{`, `[]`, `{"days":-1}`, "", "\x00"} {
		f.Add(s)
	}
	trip := tool.MustFunc("trip", "Plans a trip.", func(_ context.Context, in tripIn) (string, error) {
		return in.From + "→" + in.To, nil
	})
	lt, err := langchaingo.ToTool(trip)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, input string) {
		out, err := lt.Call(context.Background(), input)
		if err == nil {
			assert.Contains(t, out, "→")
		}
	})
}
