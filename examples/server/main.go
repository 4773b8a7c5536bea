package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/runs"
	runsmemory "github.com/trellis-go/trellis/runs/memory"
	"github.com/trellis-go/trellis/runs/sqlite"
	"github.com/trellis-go/trellis/server"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
	storesqlite "github.com/trellis-go/trellis/store/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stderr, os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// service is the running example: the Manager that keeps and works the
// runs, and the API over it.
type service struct {
	m     *runs.Manager
	store store.Store
	api   *server.Server
}

// open opens the runs backend: the SQLite file db, or, when db is empty
// or ":memory:", runs/memory (one process, no database, no durability);
// it registers the supervisor and builds the API.
func open(ctx context.Context, db, token string, dev bool) (*service, error) {
	inMemory := db == "" || db == ":memory:"
	var (
		m   *runs.Manager
		err error
	)
	if inMemory {
		m, err = runsmemory.Open(ctx)
	} else {
		m, err = sqlite.Open(ctx, db)
	}
	if err != nil {
		return nil, err
	}
	sup, err := newSupervisor(m.Saver())
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	if err := m.Register(runs.Graph(sup)); err != nil {
		_ = m.Close()
		return nil, err
	}
	// The long-term store the /store endpoints serve: in memory with the
	// runs, or in a SQLite file beside theirs.
	st := memory.New()
	if !inMemory {
		if st, err = storesqlite.Open(strings.TrimSuffix(db, ".db") + "-store.db"); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	opts := []server.Option{server.WithStore(st)}
	if token != "" {
		opts = append(opts, server.WithAuth(func(r *http.Request) (string, error) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return "", errors.New("a valid bearer token is required")
			}
			return "user", nil
		}))
	}
	if dev {
		opts = append(opts, server.WithDevPage("/dev/"))
	}
	api, err := server.New(m, opts...)
	if err != nil {
		_ = m.Close()
		_ = st.Close()
		return nil, err
	}
	return &service{m: m, store: st, api: api}, nil
}

func (s *service) close() error { return errors.Join(s.api.Close(), s.m.Close(), s.store.Close()) }

// run serves until ctx ends. When ready is not nil it receives the
// address the server listens on.
func run(ctx context.Context, logw io.Writer, args []string, ready chan<- string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(logw)
	addr := fs.String("addr", "127.0.0.1:2024", "address to listen on")
	db := fs.String("db", "", "SQLite database file of runs and threads (empty: kept in this process, with no database)")
	token := fs.String("token", "", "bearer token the requests must carry (none when empty)")
	dev := fs.Bool("dev", false, "serve the dev page at /dev/")
	if err := fs.Parse(args); err != nil {
		return err
	}
	svc, err := open(ctx, *db, *token, *dev)
	if err != nil {
		return err
	}
	defer svc.close()
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	srv := &http.Server{Handler: svc.api, ReadHeaderTimeout: 10 * time.Second}
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	worked := make(chan error, 1)
	go func() { worked <- svc.m.Work(workCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	log.Info("serving the supervisor over the LangGraph Server API", "addr", lis.Addr().String())
	if ready != nil {
		ready <- lis.Addr().String()
	}
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	stopWork()
	if werr := <-worked; err == nil {
		err = werr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
