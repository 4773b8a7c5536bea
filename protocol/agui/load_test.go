package agui_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
)

// Many clients at once, on many threads and on one: every run either
// finishes or reports that its thread was busy; none is lost or doubled.
// The shared thread ends with the message of each run that finished, once,
// and nothing of a run refused as busy.
func TestConcurrentRunsAreKeptOrRefused(t *testing.T) {
	echo := scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant("echo: " + req.Messages[len(req.Messages)-1].Text())}, nil
	})
	m := scripted.New()
	m.Fallback = &echo
	g, err := agent.NewReAct(m, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)

	const n = 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	shared := map[string]string{} // message ID → outcome, on the shared thread
	for i := range n {
		wg.Go(func() {
			thread := fmt.Sprintf("own-%d", i)
			if i%2 == 0 {
				thread = "shared"
			}
			resp := post(t, h, input(thread, fmt.Sprintf("r%d", i), userMsg(fmt.Sprintf("u%d", i), fmt.Sprintf("hello %d", i))))
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			key := fmt.Sprint(resp.StatusCode)
			if resp.StatusCode == http.StatusOK {
				evs := parseSSE(t, raw)
				checkStream(t, evs)
				last := evs[len(evs)-1]
				key = last.typ() + ":" + last.str("code")
			}
			mu.Lock()
			outcomes[key]++
			if thread == "shared" {
				shared[fmt.Sprintf("u%d", i)] = key
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for k := range outcomes {
		assert.Contains(t, []string{"RUN_FINISHED:", "RUN_ERROR:thread_busy"}, k, "%v", outcomes)
	}
	t.Logf("outcomes: %v", outcomes)
	assert.GreaterOrEqual(t, outcomes["RUN_FINISHED:"], n/2, "every thread of its own finishes: %v", outcomes)

	snap, err := g.GetState(t.Context(), agui.ThreadPrefix+"shared")
	require.NoError(t, err)
	seen := map[string]int{}
	for _, msg := range snap.State.Messages {
		seen[msg.ID]++
	}
	for id, c := range seen {
		assert.Equal(t, 1, c, "message %s is in the shared thread %d times", id, c)
	}
	for id, outcome := range shared {
		switch outcome {
		case "RUN_FINISHED:":
			assert.Equal(t, 1, seen[id], "the message of run %s, which finished, is not in the shared thread", id)
		case "RUN_ERROR:thread_busy":
			assert.Zero(t, seen[id], "the message of run %s, refused as busy, is in the shared thread", id)
		}
	}
}
