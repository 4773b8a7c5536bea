package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/agent/agui"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// An agent served over AG-UI: the client sends the conversation, and reads
// the run's events as they come.
func Example() {
	type cityArgs struct {
		City string `json:"city"`
	}
	weather := tool.MustFunc("weather", "Tells the weather of a city.", func(_ context.Context, in cityArgs) (string, error) {
		return "sunny in " + in.City, nil
	})
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "weather", `{"city":"Lyon"}`)),
		scripted.Reply("Sunny."),
	)
	g, err := agent.NewReAct(m, agent.WithTools(weather))
	if err != nil {
		panic(err)
	}
	h, err := agui.NewHandler(g)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Weather in Lyon?"}]}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	last := ""
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			panic(err)
		}
		switch {
		case ev.Type == "TOOL_CALL_RESULT":
			fmt.Println(ev.Type, ev.Content)
		case ev.Type != last && !strings.HasSuffix(ev.Type, "_CONTENT") && !strings.HasSuffix(ev.Type, "_ARGS"):
			fmt.Println(ev.Type)
		}
		last = ev.Type
	}
	// Output:
	// RUN_STARTED
	// STEP_STARTED
	// TOOL_CALL_START
	// TOOL_CALL_END
	// STEP_FINISHED
	// STEP_STARTED
	// TOOL_CALL_RESULT sunny in Lyon
	// STEP_FINISHED
	// STEP_STARTED
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_END
	// STEP_FINISHED
	// MESSAGES_SNAPSHOT
	// RUN_FINISHED
}

// A remote agent, served over AG-UI, as a tool: a supervisor's model
// would call it with a task; here the call is made directly.
func ExampleClient_Tool() {
	remote, err := agent.NewReAct(scripted.New(scripted.Reply("Lyon is sunny today.")))
	if err != nil {
		panic(err)
	}
	h, err := agui.NewHandler(remote)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	c, err := agui.NewClient(srv.URL, agui.WithHTTPClient(srv.Client()))
	if err != nil {
		panic(err)
	}
	weatherAgent, err := c.Tool("weather_agent", "Knows the weather.")
	if err != nil {
		panic(err)
	}
	res := tool.Invoke(context.Background(), weatherAgent, model.ToolCall{ID: "call_1", Name: "weather_agent", Arguments: []byte(`{"task":"Weather in Lyon?"}`)})
	answer, _, _ := strings.Cut(res.Text(), "\n\n[thread_id:")
	fmt.Println(answer)
	srv.Client().CloseIdleConnections()
	// Output: Lyon is sunny today.
}
