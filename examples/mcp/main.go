package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/protocol/mcp/broker"
	"github.com/trellis-go/trellis/tool"
)

func main() {
	everything := flag.String("everything", os.Getenv("TRELLIS_MCP_EVERYTHING"),
		"path of the mcp-server-everything executable (default: $TRELLIS_MCP_EVERYTHING, else found under .ci/node_modules or in PATH)")
	flag.Parse()
	if err := mainErr(*everything); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func mainErr(everything string) error {
	// Ctrl-C cancels the run; the deferred Close calls still stop the
	// servers, the reference server's process included.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return run(ctx, os.Stdout, everything)
}

type convertArgs struct {
	Celsius float64 `json:"celsius" jsonschema:"description=Temperature in degrees Celsius"`
}

type conversion struct {
	Celsius    float64 `json:"celsius"`
	Fahrenheit float64 `json:"fahrenheit"`
}

// weatherTools is the Trellis toolset the example serves.
func weatherTools() tool.Toolset {
	convert := tool.MustFunc("to_fahrenheit", "Converts Celsius to Fahrenheit",
		func(_ context.Context, in convertArgs) (conversion, error) {
			return conversion{Celsius: in.Celsius, Fahrenheit: in.Celsius*9/5 + 32}, nil
		}, tool.WithMetadata(tool.Metadata{ReadOnly: true}))
	return tool.NewStatic("weather", convert)
}

func run(ctx context.Context, out io.Writer, everything string) error {
	// 1. Serve a Trellis toolset over streamable HTTP on 127.0.0.1.
	srv, err := mcp.NewServer(ctx, weatherTools())
	if err != nil {
		return err
	}
	url, stop, err := serve(srv)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintln(out, "== a Trellis toolset served over MCP")
	weather, err := mcp.New(mcp.Config{Name: "weather", URL: url})
	if err != nil {
		return err
	}
	defer weather.Close() // the creator closes the toolset
	if err := weather.Init(ctx); err != nil {
		return err
	}
	if err := show(ctx, out, weather, "to_fahrenheit", `{"celsius": 21}`); err != nil {
		return err
	}

	// 2. The reference server over stdio, when it is installed.
	servers := []mcp.Config{{Name: "weather", URL: url, Description: "Temperature conversions"}}
	fmt.Fprintln(out, "== the MCP reference server over stdio")
	bin, err := findEverything(everything)
	if err != nil {
		fmt.Fprintln(out, "skipped:", err)
	} else {
		cfg := mcp.Config{Name: "everything", Command: bin, Args: []string{"stdio"},
			Description: "The MCP reference server", TerminateWait: 500 * time.Millisecond}
		ref, err := mcp.New(cfg, mcp.WithInclude("echo", "get-sum"))
		if err != nil {
			return err
		}
		defer ref.Close()
		if err := ref.Init(ctx); err != nil {
			return err
		}
		if err := show(ctx, out, ref, "get-sum", `{"a": 19, "b": 23}`); err != nil {
			return err
		}
		if err := show(ctx, out, ref, "echo", `{"message": "hello from Trellis"}`); err != nil {
			return err
		}
		servers = append(servers, cfg)
	}

	// 3. A broker: four tools instead of every remote tool.
	fmt.Fprintln(out, "== a broker over the servers")
	b, err := broker.New(broker.WithServers(servers...))
	if err != nil {
		return err
	}
	defer b.Close()
	tools, err := b.Tools(ctx)
	if err != nil {
		return err
	}
	for _, step := range []struct{ tool, args string }{
		{broker.ListServersTool, `{}`},
		{broker.ListToolsTool, `{"server": "weather"}`},
		{broker.CallToolTool, `{"server": "weather", "tool": "to_fahrenheit", "arguments": {"celsius": -40}}`},
	} {
		r, err := call(ctx, b.Name(), tools, step.tool, step.args)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s -> %s\n", step.tool, r.Text())
	}
	return nil
}

// show calls one tool of ts and prints the result.
func show(ctx context.Context, out io.Writer, ts *mcp.Toolset, name, args string) error {
	tools, err := ts.Tools(ctx)
	if err != nil {
		return err
	}
	r, err := call(ctx, ts.Name(), tools, name, args)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s -> %s (%s)\n", name, args, r.Text(), r.Status)
	return nil
}

// call makes the call a model would make to the named tool of a toolset.
// The example expects every call to succeed: an error result is an error.
func call(ctx context.Context, toolset string, tools []tool.Tool, name, args string) (tool.Result, error) {
	for _, t := range tools {
		if tool.Name(t) == name {
			r := tool.Invoke(ctx, t, model.ToolCall{ID: "call_" + name, Name: name, Arguments: json.RawMessage(args)})
			if r.IsError {
				return r, fmt.Errorf("%s: %s %s failed: %s", toolset, name, args, r.Text())
			}
			return r, nil
		}
	}
	return tool.Result{}, fmt.Errorf("toolset %q has no tool %q", toolset, name)
}

// serve runs srv's streamable HTTP handler on a free port of 127.0.0.1.
func serve(srv *mcp.Server) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: srv.Handler(nil), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(l)
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hs.Shutdown(ctx) != nil {
			_ = hs.Close()
		}
		<-done
	}
	return "http://" + l.Addr().String() + "/mcp", stop, nil
}

// findEverything locates the reference server: the path given, else
// .ci/node_modules/.bin under the current directory or a parent, else PATH.
func findEverything(given string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("the reference server runs on Node.js, which is not installed")
	}
	if given != "" {
		return given, nil
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			bin := filepath.Join(dir, ".ci", "node_modules", ".bin", "mcp-server-everything")
			if _, err := os.Stat(bin); err == nil {
				return bin, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if bin, err := exec.LookPath("mcp-server-everything"); err == nil {
		return bin, nil
	}
	return "", errors.New("mcp-server-everything not found; install it with `cd .ci && npm ci` in the repository or pass -everything")
}
