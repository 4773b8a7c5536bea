package a2a_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/protocol/a2a"
)

// Messages sent at once to one conversation of a checkpointed agent are
// never written over by one another: each accepted one is in the
// conversation once. Within one server a refused one also leaves no trace;
// across replicas sharing a store, a turn refused after it began may leave
// its message (docs/multi-agent.md: use the runs layer there).
func TestConcurrentMessagesToOneConversationAreKeptOrRefused(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			saver := newSaver()
			var urls []string
			var srv *a2a.Server
			for range replicas {
				g, err := agent.NewReAct(echoModel(), agent.WithCheckpointer(saver))
				require.NoError(t, err)
				s, err := a2a.NewServer("Echo", "Echoes.", g)
				require.NoError(t, err)
				srv = s
				urls = append(urls, serve(t, s).URL)
			}
			g, err := agent.NewReAct(echoModel(), agent.WithCheckpointer(saver))
			require.NoError(t, err)

			const n = 30
			states := make([]any, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, resp := rpc(t, urls[i%len(urls)], "1.0", send10(fmt.Sprintf("turn %d", i), "shared"))
					states[i] = path(resp, "result", "task", "status", "state")
				})
			}
			wg.Wait()
			snap, err := g.GetState(context.Background(), srv.ThreadID("", "shared"))
			require.NoError(t, err)
			inThread := map[string]int{}
			for _, m := range snap.State.Messages {
				inThread[m.Text()]++
			}
			accepted := 0
			for i, st := range states {
				msg := fmt.Sprintf("turn %d", i)
				if st == "TASK_STATE_COMPLETED" {
					accepted++
					assert.Equal(t, 1, inThread[msg], "an accepted turn is in the conversation once: %s", msg)
				} else if replicas == 1 {
					assert.Zero(t, inThread[msg], "a refused turn left no trace: %s (%v)", msg, st)
				}
			}
			assert.Positive(t, accepted)
		})
	}
}
