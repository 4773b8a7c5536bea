package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type addArgs struct {
	A int `json:"a" jsonschema:"description=First number"`
	B int `json:"b" jsonschema:"description=Second number"`
}

type cityArgs struct {
	City string `json:"city" jsonschema:"minLength=1"`
}

type forecast struct {
	City    string  `json:"city"`
	Celsius float64 `json:"celsius"`
}

type noArgs struct{}

var pixel = []byte("\x89PNG\r\n\x1a\nfake")

// fixtureTools are Trellis tools of every kind of result.
func fixtureTools() []tool.Tool {
	return []tool.Tool{
		tool.MustFunc("add", "Adds two numbers", func(_ context.Context, in addArgs) (string, error) {
			return "sum: " + strconv.Itoa(in.A+in.B), nil
		}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true})),
		tool.MustFunc("forecast", "Weather for a city", func(_ context.Context, in cityArgs) (forecast, error) {
			return forecast{City: in.City, Celsius: 21.5}, nil
		}, tool.WithOutputSchema(mustSchema[forecast]())),
		tool.MustFunc("picture", "A tiny picture", func(context.Context, noArgs) (model.Part, error) {
			return model.ImagePart("image/png", pixel), nil
		}),
		tool.MustFunc("fail", "Always fails", func(context.Context, noArgs) (string, error) {
			return "", errors.New("disk on fire")
		}),
		tool.MustFunc("boom", "Panics", func(context.Context, noArgs) (string, error) {
			panic("kaboom")
		}),
		tool.MustFunc("wipe", "Deletes everything", func(context.Context, noArgs) (string, error) {
			return "wiped", nil
		}, tool.WithMetadata(tool.Metadata{Destructive: true, OpenWorld: true})),
	}
}

func mustSchema[T any]() []byte {
	raw, err := tool.SchemaFor[T]()
	if err != nil {
		panic(err)
	}
	return raw
}

// newFixtureServer serves fixtureTools (plus extra) over MCP.
func newFixtureServer(t testing.TB, extra []tool.Tool, opts ...ServerOption) (*Server, *tool.Static) {
	t.Helper()
	set := tool.NewStatic("fixture", append(fixtureTools(), extra...)...)
	srv, err := NewServer(context.Background(), set, opts...)
	require.NoError(t, err)
	return srv, set
}

// memTransport connects each new session to srv in memory.
func memTransport(srv *Server) Option {
	return WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		if _, err := srv.MCP().Connect(ctx, server, nil); err != nil {
			return nil, err
		}
		return client, nil
	})
}

// memToolset is a toolset over srv in memory, closed when the test ends.
func memToolset(t testing.TB, srv *Server, opts ...Option) *Toolset {
	t.Helper()
	ts, err := New(Config{Name: "mem"}, append([]Option{memTransport(srv)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	return ts
}

// serveHTTP serves h on 127.0.0.1 until the test ends and returns its base
// URL.
func serveHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(l)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		<-done
	})
	return "http://" + l.Addr().String()
}
