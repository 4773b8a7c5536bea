package artifact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	statemem "github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/artifact"
)

type chartArgs struct {
	Title string `json:"title"`
}

// renderChart is an application's tool that saves what it makes as an
// artifact and tells the model no more than its name.
var renderChart = tool.MustFunc("render_chart", "Draw a chart.",
	func(ctx context.Context, in chartArgs) (string, error) {
		png := append(append([]byte{}, pngHeader...), []byte(in.Title)...)
		v, err := artifact.SaveFromTool(ctx, "chart.png", artifact.Artifact{Data: png, MediaType: "image/png", Metadata: map[string]string{"title": in.Title}})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("saved chart.png, version %d", v), nil
	})

// lastTool returns the last tool message of a request.
func lastTool(t *testing.T, req *model.Request) model.Message {
	t.Helper()
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleTool {
			return req.Messages[i]
		}
	}
	t.Fatal("the request has no tool message")
	return model.Message{}
}

func TestAgentSavesAndLoadsArtifacts(t *testing.T) {
	store := artifact.NewMemory()
	set, err := artifact.Tools(store)
	require.NoError(t, err)
	ctx := artifact.WithStore(artifact.WithUser(context.Background(), "ada"), store)
	wantPNG := append(append([]byte{}, pngHeader...), []byte("Sales")...)

	m := scripted.New(
		scripted.CallTools(scripted.Call("render_chart", `{"title":"Sales"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			// The chart is not in the conversation: only its name.
			msg := lastTool(t, req)
			assert.Equal(t, "saved chart.png, version 1", msg.Text())
			return &model.Response{Message: model.Assistant("", scripted.Call(artifact.ListName, `{}`))}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			var list artifact.ListResult
			require.NoError(t, json.Unmarshal([]byte(lastTool(t, req).Text()), &list))
			require.Len(t, list.Artifacts, 1)
			assert.Equal(t, "chart.png", list.Artifacts[0].Name)
			assert.Equal(t, "image/png", list.Artifacts[0].MediaType)
			return &model.Response{Message: model.Assistant("", scripted.Call(artifact.LoadName, `{"name":"chart.png"}`))}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			msg := lastTool(t, req)
			require.Len(t, msg.Content, 2)
			assert.Equal(t, model.ImagePart("image/png", wantPNG), msg.Content[1])
			return &model.Response{Message: model.Assistant("The chart shows sales.")}, nil
		}),
	)
	g, err := agent.NewReAct(m, agent.WithTools(renderChart), agent.WithToolsets(set), agent.WithCheckpointer(statemem.New()))
	require.NoError(t, err)
	out, err := g.Invoke(ctx, agent.Ask("Chart the sales"), graph.WithThread("thread-1"))
	require.NoError(t, err)
	assert.Equal(t, "The chart shows sales.", agent.FinalText(out.Messages))
	assert.Equal(t, 0, m.Remaining())

	// The chart is the thread's, and the user's other threads do not see
	// it.
	a, err := store.Load(context.Background(), artifact.Scope{User: "ada", Thread: "thread-1"}, "chart.png", 0)
	require.NoError(t, err)
	assert.Equal(t, wantPNG, a.Data)
	assert.Equal(t, "Sales", a.Metadata["title"])
	other, err := store.List(context.Background(), artifact.Scope{User: "ada", Thread: "thread-2"})
	require.NoError(t, err)
	assert.Empty(t, other)

	// The checkpointed conversation holds the loaded image as it was.
	snap, err := g.GetState(ctx, "thread-1")
	require.NoError(t, err)
	var found bool
	for _, msg := range snap.State.Messages {
		if msg.Role == model.RoleTool && msg.ToolName == artifact.LoadName {
			found = assert.Equal(t, model.ImagePart("image/png", wantPNG), msg.Content[1])
		}
	}
	assert.True(t, found, "no load_artifact message in the checkpoint")
}

// TestAgentRunScope shows where a tool's artifact goes with and without a
// checkpointer and a thread.
func TestAgentRunScope(t *testing.T) {
	for _, c := range []struct {
		name       string
		checkpoint bool
		opts       []graph.RunOption
		outer      string // a thread set with artifact.WithThread
		want       artifact.Scope
		wantErr    error
	}{
		{name: "checkpointer and thread", checkpoint: true, opts: []graph.RunOption{graph.WithThread("t1")}, want: artifact.Scope{App: "shop", User: "ada", Thread: "t1"}},
		{name: "thread without checkpointer", opts: []graph.RunOption{graph.WithThread("t1")}, want: artifact.Scope{App: "shop", User: "ada", Thread: "t1"}},
		{name: "no thread", want: artifact.Scope{App: "shop", User: "ada"}},
		{name: "the run's thread wins", opts: []graph.RunOption{graph.WithThread("t1")}, outer: "outer", want: artifact.Scope{App: "shop", User: "ada", Thread: "t1"}},
		{name: "context thread without a run thread", outer: "outer", want: artifact.Scope{App: "shop", User: "ada", Thread: "outer"}},
		{name: "checkpointer without thread", checkpoint: true, wantErr: graph.ErrNoThread},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := artifact.NewMemory()
			var seen artifact.Scope
			probe := tool.MustFunc("probe", "Save a note.", func(ctx context.Context, _ struct{}) (string, error) {
				seen = artifact.ScopeFromContext(ctx)
				_, err := artifact.SaveFromTool(ctx, "note.txt", artifact.Artifact{Data: []byte("hi")})
				return "ok", err
			})
			opts := []agent.Option{agent.WithTools(probe)}
			if c.checkpoint {
				opts = append(opts, agent.WithCheckpointer(statemem.New()))
			}
			g, err := agent.NewReAct(scripted.New(scripted.CallTools(scripted.Call("probe", `{}`)), scripted.Reply("done")), opts...)
			require.NoError(t, err)
			ctx := artifact.WithStore(artifact.WithApp(artifact.WithUser(context.Background(), "ada"), "shop"), store)
			if c.outer != "" {
				ctx = artifact.WithThread(ctx, c.outer)
			}
			_, err = g.Invoke(ctx, agent.Ask("go"), c.opts...)
			if c.wantErr != nil {
				require.True(t, errors.Is(err, c.wantErr), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, seen)
			a, err := store.Load(context.Background(), c.want, "note.txt", 0)
			require.NoError(t, err)
			assert.Equal(t, "hi", string(a.Data))
		})
	}
}
