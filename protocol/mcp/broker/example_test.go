package broker_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/protocol/mcp/broker"
	"github.com/trellis-go/trellis/tool"
)

type echoArgs struct {
	Text string `json:"text"`
}

// A broker over one named server. The server runs in this process and is
// reached in memory; real servers are reached through their Config.
func ExampleNew() {
	ctx := context.Background()
	echo := tool.MustFunc("echo", "Repeats the text", func(_ context.Context, in echoArgs) (string, error) {
		return in.Text, nil
	})
	srv, err := mcp.NewServer(ctx, tool.NewStatic("echoes", echo))
	if err != nil {
		panic(err)
	}
	inMemory := mcp.WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		clientEnd, serverEnd := sdk.NewInMemoryTransports()
		if _, err := srv.MCP().Connect(ctx, serverEnd, nil); err != nil {
			return nil, err
		}
		return clientEnd, nil
	})

	b, err := broker.New(
		broker.WithServers(mcp.Config{Name: "echoes", Description: "Repeats things"}),
		broker.WithToolsetOptions(inMemory),
		broker.WithAllowedURLs("https://mcp.example.com/*"),
	)
	if err != nil {
		panic(err)
	}
	defer b.Close()

	tools, _ := b.Tools(ctx)
	byName := map[string]tool.Tool{}
	for _, t := range tools {
		byName[tool.Name(t)] = t
		fmt.Println(tool.Name(t))
	}
	run := func(name, args string) string {
		return tool.Invoke(ctx, byName[name], model.ToolCall{ID: "1", Name: name, Arguments: json.RawMessage(args)}).Text()
	}
	fmt.Println(run(broker.ListToolsTool, `{"server":"echoes"}`))
	fmt.Println(run(broker.CallToolTool, `{"server":"echoes","tool":"echo","arguments":{"text":"hi"}}`))
	fmt.Println(run(broker.ListToolsTool, `{"server":"https://elsewhere.example.net/mcp"}`))
	// Output:
	// mcp_list_servers
	// mcp_list_tools
	// mcp_describe_tools
	// mcp_call_tool
	// {"server":"echoes","tools":[{"name":"echo","description":"Repeats the text"}]}
	// hi
	// broker: URL not allowed: "https://elsewhere.example.net/mcp" matches no entry of the allow-list
}
