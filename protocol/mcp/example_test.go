package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

type sumArgs struct {
	A int `json:"a" jsonschema:"description=First number"`
	B int `json:"b" jsonschema:"description=Second number"`
}

// calculator is a Trellis toolset served over MCP in the examples.
func calculator() tool.Toolset {
	sum := tool.MustFunc("sum", "Adds two numbers", func(_ context.Context, in sumArgs) (string, error) {
		return fmt.Sprintf("%d + %d = %d", in.A, in.B, in.A+in.B), nil
	}, tool.WithMetadata(tool.Metadata{ReadOnly: true}))
	return tool.NewStatic("calculator", sum)
}

// A Trellis toolset served as an MCP server, called by the go-sdk's client
// over an in-memory connection.
func ExampleNewServer() {
	ctx := context.Background()
	srv, err := mcp.NewServer(ctx, calculator())
	if err != nil {
		panic(err)
	}
	clientEnd, serverEnd := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(ctx, serverEnd, nil)
	if err != nil {
		panic(err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer func() { cs.Close(); ss.Wait() }()

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "sum", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output: 2 + 3 = 5
}

// A toolset over an MCP server. Here the server runs in the same process and
// is reached in memory (WithTransportFunc); a real one is reached through a
// Config with a Command (stdio) or a URL (streamable HTTP or SSE).
func ExampleNew() {
	ctx := context.Background()
	srv, err := mcp.NewServer(ctx, calculator())
	if err != nil {
		panic(err)
	}
	ts, err := mcp.New(mcp.Config{Name: "calculator"}, mcp.WithTransportFunc(
		func(ctx context.Context) (sdk.Transport, error) {
			clientEnd, serverEnd := sdk.NewInMemoryTransports()
			if _, err := srv.MCP().Connect(ctx, serverEnd, nil); err != nil {
				return nil, err
			}
			return clientEnd, nil
		}))
	if err != nil {
		panic(err)
	}
	defer ts.Close() // the creator closes the toolset

	if err := ts.Init(ctx); err != nil {
		panic(err)
	}
	tools, err := ts.Tools(ctx)
	if err != nil {
		panic(err)
	}
	sum := tools[0]
	fmt.Println(tool.Name(sum), tool.MetadataOf(sum).ReadOnly)
	r := tool.Invoke(ctx, sum, model.ToolCall{ID: "call_1", Name: "sum", Arguments: json.RawMessage(`{"a":40,"b":"2"}`)})
	fmt.Println(r.Status, r.Text())
	// Output:
	// sum true
	// success 40 + 2 = 42
}

// A stdio server: the toolset runs the command and ends it on Close.
func ExampleNew_stdio() {
	ts, err := mcp.New(mcp.Config{
		Name:           "everything",
		Command:        "npx",
		Args:           []string{"-y", "@modelcontextprotocol/server-everything", "stdio"},
		ConnectTimeout: time.Minute,
	}, mcp.WithInclude("echo", "get-sum"))
	if err != nil {
		panic(err)
	}
	defer ts.Close()
	ctx := context.Background()
	if err := ts.Init(ctx); err != nil {
		fmt.Println("MCP server unavailable:", err)
		return
	}
	tools, _ := ts.Tools(ctx)
	fmt.Println(len(tools))
}

type userKey struct{}

// A streamable HTTP server shared by many users: each call carries its
// user's token, taken from the call's context.
func ExampleWithHeaderFunc() {
	ts, err := mcp.New(mcp.Config{
		URL:     "https://mcp.example.com/mcp",
		Headers: map[string]string{"X-Client": "trellis"},
	}, mcp.WithHeaderFunc(func(ctx context.Context, h http.Header) error {
		if token, ok := ctx.Value(userKey{}).(string); ok {
			h.Set("Authorization", "Bearer "+token)
		}
		return nil
	}), mcp.WithReconnect(2))
	if err != nil {
		panic(err)
	}
	defer ts.Close()
	// Calls made with context.WithValue(ctx, userKey{}, token) send the
	// user's token.
}

// Only explicit hints become metadata: a hint the server left out is false.
func ExampleMetadata() {
	destructive := true
	m := mcp.Metadata(&sdk.ToolAnnotations{DestructiveHint: &destructive})
	fmt.Printf("read-only=%v destructive=%v open-world=%v\n", m.ReadOnly, m.Destructive, m.OpenWorld)
	// Output: read-only=false destructive=true open-world=false
}

// Serving a toolset over streamable HTTP.
func ExampleServer_Handler() {
	srv, err := mcp.NewServer(context.Background(), calculator())
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler(nil))
	// http.ListenAndServe("127.0.0.1:8080", mux)
	fmt.Println(srv.Tools())
	// Output: [sum]
}
