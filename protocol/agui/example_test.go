package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/agui"
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

// userKey is the context key under which the authentication middleware
// leaves the request's user.
type userKey struct{}

// authenticate is the application's authentication in front of the
// handler: it accepts a request whose bearer token it knows, and puts the
// token's user in the request's context. tokens stands for the
// application's own check (a session store, an identity provider, a
// signed token's verification).
func authenticate(tokens map[string]string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		user, known := tokens[token]
		if !ok || !known {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

// Authentication goes in front of the handler; WithOwner tells the handler
// whose request it serves, which scopes each thread to its owner and is
// in the run's context for tools (OwnerFrom).
func ExampleWithOwner() {
	whoami := tool.MustFunc("whoami", "Names the user.", func(ctx context.Context, _ struct{}) (string, error) {
		return agui.OwnerFrom(ctx), nil
	})
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "whoami", `{}`)), scripted.Reply("Hello."))
	g, err := agent.NewReAct(m, agent.WithTools(whoami))
	if err != nil {
		panic(err)
	}
	h, err := agui.NewHandler(g, agui.WithOwner(func(r *http.Request) (string, error) {
		user, ok := r.Context().Value(userKey{}).(string)
		if !ok {
			return "", errors.New("no authenticated user")
		}
		return user, nil
	}))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(authenticate(map[string]string{"s3cret": "ada"}, h))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	body := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Who am I?"}]}`
	for _, token := range []string{"wrong", "s3cret"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Status)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev struct {
				Type    string `json:"type"`
				Content string `json:"content"`
			}
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "TOOL_CALL_RESULT" {
				fmt.Println("whoami:", ev.Content)
			}
		}
		resp.Body.Close()
	}
	// Output:
	// 401 Unauthorized
	// 200 OK
	// whoami: ada
}
