package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/provider"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
)

// page is the web page that talks to the agent.
//
//go:embed page.html
var page []byte

// request is what the demo asks unless told otherwise.
const request = "I need a lamp for my desk."

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "agui:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := start(ctx, os.Stdout, os.Getenv, os.Args[1:])
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil // Ctrl-C ends the server
	}
	return err
}

// start serves the page and the agent (until ctx ends), or with -demo plays
// the page's part once against a server on a free port.
func start(ctx context.Context, w io.Writer, getenv func(string) string, args []string) error {
	fs := flag.NewFlagSet("agui", flag.ContinueOnError)
	fs.SetOutput(w)
	addr := fs.String("addr", "127.0.0.1:8080", "the address to serve on")
	demo := fs.Bool("demo", false, "play the page's part in the terminal, then exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mux, which, err := newServer(getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "model: %s\n", which)
	if *demo {
		*addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		<-served
	}()
	base := "http://" + ln.Addr().String()
	if *demo {
		q := request
		if rest := fs.Args(); len(rest) > 0 {
			q = strings.Join(rest, " ")
		}
		return play(ctx, w, base+"/agent", q)
	}
	fmt.Fprintf(w, "open %s/ in a browser (Ctrl-C stops)\n", base)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-served:
		return err
	}
}

// newServer builds the agent and the mux that serves it at /agent and
// the page at /.
func newServer(getenv func(string) string) (*http.ServeMux, string, error) {
	m, which, err := provider.Lookup(getenv)
	if err != nil {
		return nil, "", err
	}
	if m == nil {
		m = offline()
	}
	g, err := agent.NewReAct(m,
		agent.WithSystemPrompt("You are the assistant of a small furniture shop. Find what the user asks for with "+
			"find_product, then add the best match to the cart with add_to_cart (the page runs it), and say what you added."),
		agent.WithTools(findProduct()),
		agent.WithCheckpointer(memory.New()))
	if err != nil {
		return nil, "", err
	}
	h, err := agui.NewHandler(g)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /agent", h)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	return mux, which, nil
}

// The page's tool, as the page declares it.
var addToCart = map[string]any{
	"name":        "add_to_cart",
	"description": "Adds a product to the user's cart, shown on the page.",
	"parameters": map[string]any{"type": "object", "required": []string{"sku"}, "properties": map[string]any{
		"sku":      map[string]any{"type": "string", "description": "The product's SKU"},
		"quantity": map[string]any{"type": "integer", "minimum": 1},
	}},
}

// play acts as the page: it sends the user's message, prints the run's
// events, runs add_to_cart when the agent calls it and sends the result,
// until a run ends with nothing left to do.
func play(ctx context.Context, w io.Writer, url, text string) error {
	var cart []string
	messages := []any{map[string]any{"id": "user-1", "role": "user", "content": text}}
	fmt.Fprintf(w, "user: %s\n", text)
	for turn := 1; turn <= 5; turn++ {
		cartText := "empty"
		if len(cart) > 0 {
			cartText = strings.Join(cart, ", ")
		}
		input := map[string]any{
			"threadId": "demo", "runId": fmt.Sprintf("run-%d", turn), "protocolVersion": agui.ProtocolVersion,
			"messages": messages, "tools": []any{addToCart},
			"context": []any{map[string]any{"description": "the cart", "value": cartText}},
		}
		res, err := runOnce(ctx, w, url, input)
		if err != nil {
			return err
		}
		messages = res.messages
		if len(res.pending) == 0 {
			fmt.Fprintf(w, "cart: %s\n", strings.Join(cart, ", "))
			return nil
		}
		for _, call := range res.pending {
			var a struct {
				SKU      string `json:"sku"`
				Quantity int    `json:"quantity"`
			}
			result, failed := "", ""
			if err := json.Unmarshal([]byte(res.calls[call]), &a); err != nil || a.SKU == "" {
				failed = "the page needs a sku"
			} else {
				cart = append(cart, a.SKU)
				result = fmt.Sprintf("added %s to the cart", a.SKU)
			}
			fmt.Fprintf(w, "page: ran add_to_cart → %s%s\n", result, failed)
			msg := map[string]any{"id": "page-" + call, "role": "tool", "toolCallId": call, "content": result + failed}
			if failed != "" {
				msg["error"] = failed
			}
			messages = append(messages, msg)
		}
	}
	return errors.New("the agent kept calling the page's tool")
}

// result is what one run left the page with.
type result struct {
	messages []any             // the conversation, from MESSAGES_SNAPSHOT
	pending  []string          // calls of the page's tool to run
	calls    map[string]string // call ID → arguments
}

// runOnce posts one run with the AG-UI client and prints its events.
func runOnce(ctx context.Context, w io.Writer, url string, input map[string]any) (result, error) {
	body, err := json.Marshal(input)
	if err != nil {
		return result{}, err
	}
	var in agui.RunInput
	if err := json.Unmarshal(body, &in); err != nil {
		return result{}, err
	}
	client, err := agui.NewClient(url)
	if err != nil {
		return result{}, err
	}
	res := result{calls: map[string]string{}}
	names := map[string]string{}
	for ev, err := range client.Run(ctx, &in) {
		if err != nil {
			return result{}, err
		}
		switch ev.Type {
		case agui.EventTextMessageStart:
			fmt.Fprint(w, "agent: ")
		case agui.EventTextMessageContent:
			fmt.Fprint(w, ev.Delta)
		case agui.EventTextMessageEnd:
			fmt.Fprintln(w)
		case agui.EventToolCallStart:
			names[ev.ToolCallID] = ev.ToolCallName
		case agui.EventToolCallArgs:
			res.calls[ev.ToolCallID] += ev.Delta
		case agui.EventToolCallEnd:
			fmt.Fprintf(w, "call:  %s %s\n", names[ev.ToolCallID], res.calls[ev.ToolCallID])
		case agui.EventToolCallResult:
			var text string
			_ = json.Unmarshal(ev.Content, &text)
			fmt.Fprintf(w, "result: %s\n", strings.ReplaceAll(text, "\n", "; "))
		case agui.EventMessagesSnapshot:
			b, err := json.Marshal(ev.Messages)
			if err != nil {
				return result{}, err
			}
			res.messages = nil
			if err := json.Unmarshal(b, &res.messages); err != nil {
				return result{}, err
			}
		case agui.EventRunError:
			return result{}, fmt.Errorf("the run failed: %s", ev.Message)
		case agui.EventRunFinished:
			if ev.Outcome != nil {
				res.pending = ev.Outcome.PendingToolCallIDs
			}
			return res, nil
		}
	}
	return result{}, errors.New("the stream ended before the run did")
}
