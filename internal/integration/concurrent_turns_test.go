package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state"
)

// concurrentTurns is how many turns TestConcurrentTurnsOnOneThread sends to
// one thread at once.
const concurrentTurns = 100

// Many turns sent to one thread at once: each is either accepted, and then
// the thread's history holds it (its message and the answer to it) exactly
// once, or refused with an error matching graph.ErrThreadBusy, and then no
// checkpoint of the thread holds its message. No turn is lost, none is
// half-written.
//
// The turns go through agent.Continue and, in the second half, through the
// AG-UI handler, whose refusals the client sees as RUN_ERROR with code
// "thread_busy".
func TestConcurrentTurnsOnOneThreadAreKeptOrRefused(t *testing.T) {
	slow(t)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			if s.name == "postgres" && testing.Short() {
				t.Skip("needs a PostgreSQL server; skipped in -short")
			}
			t.Run("Continue", func(t *testing.T) {
				testConcurrentTurns(t, s.open(t), func(ctx context.Context, g *graph.Graph[agent.State], thread string, i int) error {
					_, err := agent.Continue(ctx, g, thread, racingTurn(i))
					return err
				})
			})
			t.Run("AG-UI", func(t *testing.T) {
				testConcurrentTurns(t, s.open(t), aguiTurn)
			})
		})
	}
}

// aguiTurn sends turn i to thread through an AG-UI handler over g: a
// request with the turn's message alone, which the handler adds to the
// thread. A run refused with code "thread_busy" is reported as an error
// matching graph.ErrThreadBusy.
func aguiTurn(ctx context.Context, g *graph.Graph[agent.State], thread string, i int) error {
	h, err := agui.NewHandler(g)
	if err != nil {
		return err
	}
	content, err := json.Marshal(racingTurn(i))
	if err != nil {
		return err
	}
	body, err := json.Marshal(agui.RunInput{
		ThreadID: thread, RunID: fmt.Sprintf("run-%d", i),
		Messages: []agui.Message{{ID: fmt.Sprintf("user-%d", i), Role: "user", Content: content}},
	})
	if err != nil {
		return err
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/agent", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("status %d: %s", rec.Code, rec.Body)
	}
	for line := range strings.Lines(rec.Body.String()) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type, Code, Message string
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("event %q: %w", data, err)
		}
		switch {
		case ev.Type == "RUN_FINISHED":
			return nil
		case ev.Type == "RUN_ERROR" && ev.Code == "thread_busy":
			return fmt.Errorf("RUN_ERROR %s: %w", ev.Message, graph.ErrThreadBusy)
		case ev.Type == "RUN_ERROR":
			return fmt.Errorf("RUN_ERROR %s: %s", ev.Code, ev.Message)
		}
	}
	return fmt.Errorf("the stream has neither RUN_FINISHED nor RUN_ERROR: %s", rec.Body)
}

func testConcurrentTurns(t *testing.T, saver state.Saver, turn func(ctx context.Context, g *graph.Graph[agent.State], thread string, i int) error) {
	ctx := context.Background()
	echo := reactive("echo", func(msgs []model.Message) model.Message {
		return model.Assistant("answer to " + lastUser(msgs))
	})
	g, err := agent.NewReAct(echo, agent.WithCheckpointer(saver))
	require.NoError(t, err)
	const thread = "busy"
	// The thread exists before the turns race, as a conversation does.
	require.NoError(t, turn(ctx, g, thread, -1))

	errs := make([]error, concurrentTurns)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range concurrentTurns {
		wg.Go(func() {
			<-start
			errs[i] = turn(ctx, g, thread, i)
		})
	}
	close(start)
	wg.Wait()

	var accepted, refused []int
	for i, err := range errs {
		switch {
		case err == nil:
			accepted = append(accepted, i)
		case errors.Is(err, graph.ErrThreadBusy):
			refused = append(refused, i)
		default:
			t.Errorf("turn %d failed with an error that is not ErrThreadBusy: %v", i, err)
		}
	}
	t.Logf("%d turns accepted, %d refused", len(accepted), len(refused))
	require.NotEmpty(t, accepted)

	snap, err := g.GetState(ctx, agui.ThreadPrefix+thread)
	if errors.Is(err, state.ErrNotFound) {
		snap, err = g.GetState(ctx, thread) // the turns went through Continue
	}
	require.NoError(t, err)
	msgs := snap.State.Messages
	count := func(role model.Role, text string) int {
		n := 0
		for _, m := range msgs {
			if m.Role == role && m.Text() == text {
				n++
			}
		}
		return n
	}
	for _, i := range accepted {
		assert.Equal(t, 1, count(model.RoleUser, racingTurn(i)), "accepted turn %d: its message", i)
		assert.Equal(t, 1, count(model.RoleAssistant, "answer to "+racingTurn(i)), "accepted turn %d: its answer", i)
	}
	for _, i := range refused {
		assert.Zero(t, count(model.RoleUser, racingTurn(i)), "refused turn %d left its message in the thread", i)
	}
	assert.Equal(t, 1+len(accepted), userTurns(msgs), "the thread holds the opening and the accepted turns, nothing else")

	// No checkpoint, not even one the thread has moved past, holds a
	// refused turn's message.
	history, err := g.History(ctx, snap.Thread, 0)
	require.NoError(t, err)
	isRefused := make(map[string]bool, len(refused))
	for _, i := range refused {
		isRefused[racingTurn(i)] = true
	}
	for _, h := range history {
		for _, m := range h.State.Messages {
			if m.Role == model.RoleUser && isRefused[m.Text()] {
				t.Errorf("checkpoint %s (%s) holds the message of a refused turn: %q", h.CheckpointID, h.Source, m.Text())
			}
		}
	}
	// The history is one chain: each checkpoint follows the one before it.
	for k := 0; k+1 < len(history); k++ {
		assert.Equal(t, history[k+1].CheckpointID, history[k].ParentID, "checkpoint %d of the history", k)
	}
	assert.Equal(t, racingTurn(-1), msgs[0].Text())
}

// racingTurn is the message of turn i; -1 is the turn that opens the thread.
func racingTurn(i int) string {
	if i < 0 {
		return "opening"
	}
	return fmt.Sprintf("turn %d", i)
}
