package integration

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// stressThreads is how many threads a stress test runs at once on a store:
// the in-memory store takes the most, the durable ones fewer, so that the
// whole file stays fast on a small machine under the race detector.
func stressThreads(store string) int {
	if store == "sqlite" {
		return 30
	}
	return 50
}

// eachStressStore runs f once per store, as subtests, with the number of
// threads to run on it.
func eachStressStore(t *testing.T, f func(t *testing.T, saver state.Saver, n int)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { f(t, s.open(t), stressThreads(s.name)) })
	}
}

// tally counts what happened by key, safely across goroutines.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (t *tally) add(k string) {
	t.mu.Lock()
	t.n[k]++
	t.mu.Unlock()
}

func (t *tally) get(k string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[k]
}

// chaos cancels runs at chosen points: each thread given a target is
// cancelled at its target-th tick (a checkpoint or write saved, a model
// call, a tool call), counted across the thread's nested runs too.
type chaos struct {
	mu      sync.Mutex
	targets map[string]*chaosTarget
	stopped bool // ticks count no more (see stop)
}

type chaosTarget struct {
	at, n  int
	cancel context.CancelFunc
}

func newChaos() *chaos { return &chaos{targets: map[string]*chaosTarget{}} }

// arm makes thread's run cancelled, by cancel, at its at-th tick.
func (c *chaos) arm(thread string, at int, cancel context.CancelFunc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.targets[thread] = &chaosTarget{at: at, cancel: cancel}
}

// fired reports whether thread's run was cancelled by its target.
func (c *chaos) fired(thread string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tg := c.targets[thread]
	return tg != nil && tg.n >= tg.at
}

// stop makes later ticks do nothing: calls abandoned by the cancelled runs
// may still be running, and tick, when the fresh runs begin.
func (c *chaos) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
}

func (c *chaos) tick(thread string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	tg := c.targets[thread]
	if tg == nil || c.stopped {
		c.mu.Unlock()
		return
	}
	tg.n++
	fire := tg.n == tg.at
	c.mu.Unlock()
	if fire {
		tg.cancel()
	}
}

// chaosSaver ticks after every checkpoint and write it saves.
type chaosSaver struct {
	state.Saver
	c *chaos
}

func (s chaosSaver) Put(ctx context.Context, cp state.Checkpoint) error {
	err := s.Saver.Put(ctx, cp)
	s.c.tick(cp.ThreadID)
	return err
}

func (s chaosSaver) PutWrites(ctx context.Context, thread, ns, id string, writes []state.PendingWrite) error {
	err := s.Saver.PutWrites(ctx, thread, ns, id, writes)
	s.c.tick(thread)
	return err
}

// chaosModel ticks before every call of inner, and fails a call whose
// context has ended, as a provider would.
type chaosModel struct {
	inner model.Model
	c     *chaos
}

func (m chaosModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.c.tick(graph.ThreadID(ctx))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.inner.Generate(ctx, req)
}

func (m chaosModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	m.c.tick(graph.ThreadID(ctx))
	if err := ctx.Err(); err != nil {
		return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, err) }
	}
	return m.inner.Stream(ctx, req)
}

// world is the tools of the stress tests and what they did: lookups of
// invoices (read-only, shared by threads: the cache serves them) and
// payments, which wait for a human's approval unless the invoice is
// marked auto.
type world struct {
	lookups *tally
	paid    *tally
	c       *chaos
}

func newWorld() *world { return &world{lookups: newTally(), paid: newTally()} }

func (w *world) lookup() tool.Tool {
	return tool.MustFunc("lookup", "looks an invoice up", func(ctx context.Context, in struct {
		Invoice string `json:"invoice"`
	}) (string, error) {
		w.c.tick(graph.ThreadID(ctx))
		if err := ctx.Err(); err != nil {
			return "", err
		}
		w.lookups.add(in.Invoice)
		return in.Invoice + " is due", nil
	}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

func (w *world) pay() tool.Tool {
	return tool.MustFunc("pay", "pays an invoice once a human approves", func(ctx context.Context, in struct {
		Invoice string `json:"invoice"`
	}) (string, error) {
		w.c.tick(graph.ThreadID(ctx))
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if !strings.HasPrefix(in.Invoice, "auto-") {
			ok, err := graph.Interrupt[bool](ctx, "approve "+in.Invoice)
			if err != nil {
				return "", err
			}
			if !ok {
				return "declined " + in.Invoice, nil
			}
		}
		w.paid.add(in.Invoice)
		return "paid " + in.Invoice, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
}

// stressExecutor is one parallel executor, with the recommended middleware
// and a rate limit that makes calls wait their turn, shared by every agent
// and every thread of a test.
func stressExecutor() executor.Executor {
	return executor.Parallel(nodes.StreamToolEvents(), executor.WithMiddleware(
		middleware.Cache(middleware.WithClock(instantClock{})),
		middleware.Retry(middleware.WithMaxAttempts(3), middleware.WithClock(instantClock{})),
		middleware.CircuitBreaker(middleware.WithConsecutiveFailures(2)),
		middleware.RateLimit(rate.Limit(50), 4, middleware.WithClock(instantClock{})),
		middleware.Timeout(time.Minute),
	))
}

// invoiceOf names thread's invoice of a turn: auto-paid on one thread in
// three, else paid once a human approves.
func invoiceOf(thread string, i, turn int) string {
	if i%3 == 0 {
		return fmt.Sprintf("auto-%s-%d", thread, turn)
	}
	return fmt.Sprintf("%s-%d", thread, turn)
}

// approves says whether the human approves thread i's payments.
func approves(i int) bool { return i%4 != 3 }

// turnText is the user's message of a turn: the invoice to pay, and a
// shared one to look up.
func turnText(thread string, i, turn int) string {
	return invoiceOf(thread, i, turn) + " " + fmt.Sprintf("INV-%d", i%5)
}

// clerkModel answers a user's turn "<invoice> <lookup>" with a lookup and
// a payment in one batch, then sums up what the tools said.
func clerkModel(name string) *scripted.Model {
	return reactive(name, func(msgs []model.Message) model.Message {
		last := msgs[len(msgs)-1]
		if last.Role == model.RoleTool {
			return model.Assistant("done: " + strings.Join(trailingToolTexts(msgs), " | "))
		}
		f := strings.Fields(last.Text())
		n := itoa(userTurns(msgs))
		return model.Assistant("",
			scripted.CallWithID("l"+n, "lookup", jsonArgs(map[string]string{"invoice": f[1]})),
			scripted.CallWithID("p"+n, "pay", jsonArgs(map[string]string{"invoice": f[0]})))
	})
}

// newClerk is a ReAct agent over saver that runs clerkModel's calls.
func newClerk(t *testing.T, saver state.Saver, w *world, exec executor.Executor, m model.Model) *graph.Graph[agent.State] {
	t.Helper()
	if m == nil {
		m = clerkModel("clerk")
	}
	g, err := agent.NewReAct(m, agent.WithTools(w.lookup(), w.pay()), agent.WithExecutor(exec), agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// finish resumes thread until its run ends, answering every pending
// interrupt with approve, and returns the final state.
func finish(ctx context.Context, g *graph.Graph[agent.State], thread string, approve bool) (agent.State, error) {
	snap, err := g.GetState(ctx, thread)
	if err != nil {
		return agent.State{}, err
	}
	pending := snap.Interrupts
	for range 10 {
		var opts []graph.RunOption
		for _, in := range pending {
			opts = append(opts, graph.WithResume(in.ID, approve))
		}
		out, err := g.Resume(ctx, thread, opts...)
		var ie *graph.InterruptError
		if !errors.As(err, &ie) {
			return out, err
		}
		pending = ie.Interrupts
	}
	return agent.State{}, fmt.Errorf("thread %q: still paused after 10 resumes", thread)
}

// checkConversation asserts that msgs are a consistent conversation: no
// message ID twice, no call ID twice, every tool message answers a call
// made before it, and every call is answered exactly once.
func checkConversation(t *testing.T, thread string, msgs []model.Message) {
	t.Helper()
	ids := map[string]bool{}
	calls := map[string]bool{}
	answers := map[string]int{}
	for i, m := range msgs {
		if m.ID != "" {
			assert.False(t, ids[m.ID], "thread %s: message %d: duplicate message ID %s", thread, i, m.ID)
			ids[m.ID] = true
		}
		switch m.Role {
		case model.RoleAssistant:
			for _, c := range m.ToolCalls {
				assert.False(t, calls[c.ID], "thread %s: call ID %s made twice", thread, c.ID)
				calls[c.ID] = true
			}
		case model.RoleTool:
			assert.True(t, calls[m.ToolCallID], "thread %s: tool message %d answers %s, which no earlier call made", thread, i, m.ToolCallID)
			answers[m.ToolCallID]++
		}
	}
	for id := range calls {
		assert.Equal(t, 1, answers[id], "thread %s: call %s answered %d times", thread, id, answers[id])
	}
}

// checkThread asserts that thread's run is over and its history one
// chain, each checkpoint following the one before it.
func checkThread(t *testing.T, g *graph.Graph[agent.State], thread string) []model.Message {
	t.Helper()
	ctx := context.Background()
	snap, err := g.GetState(ctx, thread)
	require.NoError(t, err, "thread %s", thread)
	assert.Empty(t, snap.Interrupts, "thread %s", thread)
	assert.Empty(t, snap.Next, "thread %s", thread)
	hist, err := g.History(ctx, thread, 0)
	require.NoError(t, err, "thread %s", thread)
	require.NotEmpty(t, hist, "thread %s", thread)
	assert.Equal(t, snap.CheckpointID, hist[0].CheckpointID, "thread %s", thread)
	for i := 1; i < len(hist); i++ {
		assert.Equal(t, hist[i].CheckpointID, hist[i-1].ParentID, "thread %s: history %d links to its parent", thread, i-1)
	}
	assert.Empty(t, hist[len(hist)-1].ParentID, "thread %s: the oldest checkpoint has no parent", thread)
	checkConversation(t, thread, snap.State.Messages)
	return snap.State.Messages
}

// checkAnswers asserts the texts of thread i's tool messages for turn:
// the lookup and the payment, as the human answered it.
func checkAnswers(t *testing.T, msgs []model.Message, thread string, i, turn int) {
	t.Helper()
	inv := invoiceOf(thread, i, turn)
	want := "paid " + inv
	if !strings.HasPrefix(inv, "auto-") && !approves(i) {
		want = "declined " + inv
	}
	assert.Equal(t, fmt.Sprintf("INV-%d is due", i%5), toolMessage(t, msgs, "l"+itoa(turn)).Text(), "thread %s", thread)
	assert.Equal(t, want, toolMessage(t, msgs, "p"+itoa(turn)).Text(), "thread %s", thread)
}

// One compiled ReAct agent serves many threads at once over one store,
// with shared middleware: each thread pauses for approval (but one in
// three), is resumed concurrently with the others, and runs a second turn.
// Every payment is made exactly once, as approved, and every thread's
// history is consistent.
func TestStressReActThreadsPauseAndResume(t *testing.T) {
	slow(t)
	eachStressStore(t, func(t *testing.T, saver state.Saver, n int) {
		ctx := context.Background()
		w := newWorld()
		g := newClerk(t, saver, w, stressExecutor(), nil)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			thread := fmt.Sprintf("react-%d", i)
			wg.Go(func() {
				errs[i] = func() error {
					for turn := 1; turn <= 2; turn++ {
						_, err := agent.Continue(ctx, g, thread, turnText(thread, i, turn))
						var ie *graph.InterruptError
						switch {
						case errors.As(err, &ie):
							if len(ie.Interrupts) != 1 {
								return fmt.Errorf("turn %d: %d interrupts", turn, len(ie.Interrupts))
							}
							if _, err := g.Resume(ctx, thread, graph.WithResume(ie.Interrupts[0].ID, approves(i))); err != nil {
								return fmt.Errorf("turn %d: resume: %w", turn, err)
							}
						case err != nil:
							return fmt.Errorf("turn %d: %w", turn, err)
						case !strings.HasPrefix(invoiceOf(thread, i, turn), "auto-"):
							return fmt.Errorf("turn %d: the payment did not wait for approval", turn)
						}
					}
					return nil
				}()
			})
		}
		wg.Wait()
		for i := range n {
			thread := fmt.Sprintf("react-%d", i)
			require.NoError(t, errs[i], "thread %s", thread)
			msgs := checkThread(t, g, thread)
			assert.Equal(t, 2, userTurns(msgs), "thread %s", thread)
			for turn := 1; turn <= 2; turn++ {
				checkAnswers(t, msgs, thread, i, turn)
				inv := invoiceOf(thread, i, turn)
				want := 0
				if strings.HasPrefix(inv, "auto-") || approves(i) {
					want = 1
				}
				assert.Equal(t, want, w.paid.get(inv), "payments of %s", inv)
			}
		}
	})
}

// Several callers resume one paused thread at once, through Resume and
// ResumeStream alike: exactly one runs it, the others are told the thread
// is busy, and the payment is made once.
func TestStressConcurrentResumeOfOneThread(t *testing.T) {
	eachStore(t, func(t *testing.T, saver state.Saver) {
		const threads, racers = 6, 5
		ctx := context.Background()
		w := newWorld()
		// The winner's payment holds the thread until every other racer
		// of its thread has returned.
		gates := make([]chan struct{}, threads)
		for i := range gates {
			gates[i] = make(chan struct{})
		}
		hold := tool.MustFunc("pay", "pays an invoice once a human approves", func(ctx context.Context, in struct {
			Invoice string `json:"invoice"`
		}) (string, error) {
			ok, err := graph.Interrupt[bool](ctx, "approve "+in.Invoice)
			if err != nil {
				return "", err
			}
			var i int
			_, _ = fmt.Sscanf(graph.ThreadID(ctx), "race-%d", &i)
			<-gates[i]
			if !ok {
				return "declined " + in.Invoice, nil
			}
			w.paid.add(in.Invoice)
			return "paid " + in.Invoice, nil
		}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
		g, err := agent.NewReAct(clerkModel("clerk"), agent.WithTools(w.lookup(), hold),
			agent.WithExecutor(stressExecutor()), agent.WithCheckpointer(saver))
		require.NoError(t, err)

		ids := make([]string, threads)
		for i := range threads {
			thread := fmt.Sprintf("race-%d", i)
			_, err := g.Invoke(ctx, agent.Ask(fmt.Sprintf("%s-1 INV-%d", thread, i)), graph.WithThread(thread))
			var ie *graph.InterruptError
			require.ErrorAs(t, err, &ie)
			require.Len(t, ie.Interrupts, 1)
			ids[i] = ie.Interrupts[0].ID
		}

		type outcome struct {
			thread int
			err    error
		}
		results := make(chan outcome, threads*racers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range threads {
			thread := fmt.Sprintf("race-%d", i)
			for r := range racers {
				wg.Go(func() {
					<-start
					var err error
					if r%2 == 0 {
						_, err = g.Resume(ctx, thread, graph.WithResume(ids[i], true))
					} else {
						_, err = collect(g.ResumeStream(ctx, thread, graph.WithResume(ids[i], true)))
					}
					results <- outcome{i, err}
				})
			}
		}
		close(start)
		busy := make([]int, threads)
		won := make([]int, threads)
		other := make([][]error, threads)
		count := func(o outcome) {
			switch {
			case o.err == nil:
				won[o.thread]++
			case errors.Is(o.err, graph.ErrThreadBusy):
				busy[o.thread]++
			default:
				other[o.thread] = append(other[o.thread], o.err)
			}
		}
		// Each thread's gate opens once all its racers but one returned.
		returned := make([]int, threads)
		for range threads * racers {
			o := <-results
			count(o)
			if returned[o.thread]++; returned[o.thread] == racers-1 {
				close(gates[o.thread])
			}
		}
		wg.Wait()
		for i := range threads {
			thread := fmt.Sprintf("race-%d", i)
			assert.Empty(t, other[i], "thread %s", thread)
			assert.Equal(t, 1, won[i], "thread %s: one resume runs the thread", thread)
			assert.Equal(t, racers-1, busy[i], "thread %s: the others find it busy", thread)
			assert.Equal(t, 1, w.paid.get(thread+"-1"), "thread %s: paid once", thread)
			msgs := checkThread(t, g, thread)
			assert.Equal(t, "paid "+thread+"-1", toolMessage(t, msgs, "p1").Text())
		}
	})
}

// supervisorTeam is a supervisor over a researcher (lookups) and a payer
// (payments that wait for approval), every agent sharing one executor.
// The supervisor sends both workers a task in one batch each turn.
func supervisorTeam(t *testing.T, saver state.Saver, w *world, exec executor.Executor, c *chaos) *graph.Graph[agent.State] {
	t.Helper()
	wrap := func(m model.Model) model.Model {
		if c == nil {
			return m
		}
		return chaosModel{inner: m, c: c}
	}
	resM := oneToolWorker("researcher", "lookup", "found: ", func(task string) string {
		return jsonArgs(map[string]string{"invoice": task})
	})
	payM := oneToolWorker("payer", "pay", "payer: ", func(task string) string {
		return jsonArgs(map[string]string{"invoice": task})
	})
	researcher, err := agent.NewReAct(wrap(resM), agent.WithName("researcher"), agent.WithTools(w.lookup()), agent.WithExecutor(exec))
	require.NoError(t, err)
	payer, err := agent.NewReAct(wrap(payM), agent.WithName("payer"), agent.WithTools(w.pay()), agent.WithExecutor(exec))
	require.NoError(t, err)
	supM := reactive("boss", func(msgs []model.Message) model.Message {
		last := msgs[len(msgs)-1]
		if last.Role == model.RoleTool {
			return model.Assistant("done: " + strings.Join(trailingToolTexts(msgs), " | "))
		}
		f := strings.Fields(last.Text())
		n := itoa(userTurns(msgs))
		return model.Assistant("",
			scripted.CallWithID("r"+n, "researcher", jsonArgs(map[string]string{"task": f[1]})),
			scripted.CallWithID("p"+n, "payer", jsonArgs(map[string]string{"task": f[0]})))
	})
	sup, err := agent.NewSupervisor(wrap(supM), []agent.Worker{
		{Name: "researcher", Description: "Looks invoices up.", Agent: researcher},
		{Name: "payer", Description: "Pays invoices.", Agent: payer},
	}, agent.WithExecutor(exec), agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return sup
}

// checkTeamAnswers asserts what the workers answered in thread i's turn.
func checkTeamAnswers(t *testing.T, msgs []model.Message, thread string, i, turn int) {
	t.Helper()
	inv := invoiceOf(thread, i, turn)
	want := "payer: paid " + inv
	if !strings.HasPrefix(inv, "auto-") && !approves(i) {
		want = "payer: declined " + inv
	}
	assert.Equal(t, fmt.Sprintf("found: INV-%d is due", i%5), toolMessage(t, msgs, "r"+itoa(turn)).Text(), "thread %s", thread)
	assert.Equal(t, want, toolMessage(t, msgs, "p"+itoa(turn)).Text(), "thread %s", thread)
}

// One supervisor whose workers are handoffs serves many threads at once:
// workers pause for approval inside their nested runs, threads are resumed
// concurrently, by the graph that paused them or by a second instance
// over the same store (another process), and run a second turn.
func TestStressSupervisorThreads(t *testing.T) {
	slow(t)
	eachStressStore(t, func(t *testing.T, saver state.Saver, n int) {
		ctx := context.Background()
		w := newWorld()
		exec := stressExecutor()
		sups := []*graph.Graph[agent.State]{supervisorTeam(t, saver, w, exec, nil), supervisorTeam(t, saver, w, exec, nil)}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			thread := fmt.Sprintf("team-%d", i)
			wg.Go(func() {
				errs[i] = func() error {
					for turn := 1; turn <= 2; turn++ {
						_, err := agent.Continue(ctx, sups[0], thread, turnText(thread, i, turn))
						var ie *graph.InterruptError
						switch {
						case errors.As(err, &ie):
							if len(ie.Interrupts) != 1 || len(ie.Interrupts[0].Path) != 1 || ie.Interrupts[0].Path[0] != "payer" {
								return fmt.Errorf("turn %d: unexpected interrupts %+v", turn, ie.Interrupts)
							}
							if _, err := sups[i%2].Resume(ctx, thread, graph.WithResumeValue(approves(i))); err != nil {
								return fmt.Errorf("turn %d: resume: %w", turn, err)
							}
						case err != nil:
							return fmt.Errorf("turn %d: %w", turn, err)
						}
					}
					return nil
				}()
			})
		}
		wg.Wait()
		for i := range n {
			thread := fmt.Sprintf("team-%d", i)
			require.NoError(t, errs[i], "thread %s", thread)
			msgs := checkThread(t, sups[0], thread)
			for turn := 1; turn <= 2; turn++ {
				checkTeamAnswers(t, msgs, thread, i, turn)
				inv := invoiceOf(thread, i, turn)
				want := 0
				if strings.HasPrefix(inv, "auto-") || approves(i) {
					want = 1
				}
				assert.Equal(t, want, w.paid.get(inv), "payments of %s", inv)
			}
		}
	})
}

// Streams of one agent run side by side; some consumers stop reading
// early, at different points. The complete streams are whole (every node
// that starts ends), and every abandoned thread is finished by a fresh
// graph over the same store without answering a call twice.
func TestStressStreamsLeftEarly(t *testing.T) {
	slow(t)
	eachStressStore(t, func(t *testing.T, saver state.Saver, n int) {
		ctx := context.Background()
		w := newWorld()
		g := newClerk(t, saver, w, stressExecutor(), nil)
		modes := graph.ModeEvents | graph.ModeUpdates | graph.ModeValues | graph.ModeMessages | graph.ModeCustom
		var wg sync.WaitGroup
		full := make([][]graph.Event, n)
		fullErr := make([]error, n)
		for i := range n {
			thread := fmt.Sprintf("stream-%d", i)
			wg.Go(func() {
				seq := g.Stream(ctx, agent.Ask(turnText(thread, i, 1)), graph.WithThread(thread), graph.WithModes(modes))
				if i%3 == 0 {
					full[i], fullErr[i] = collect(seq)
					return
				}
				stopAt, seen := (i*7)%17+1, 0
				for _, err := range seq {
					if err != nil {
						return
					}
					if seen++; seen == stopAt {
						break
					}
				}
			})
		}
		wg.Wait()

		fresh := newClerk(t, saver, w, stressExecutor(), nil)
		for i := range n {
			thread := fmt.Sprintf("stream-%d", i)
			if i%3 == 0 {
				inv := invoiceOf(thread, i, 1)
				if strings.HasPrefix(inv, "auto-") {
					require.NoError(t, fullErr[i], "thread %s", thread)
					require.NotEmpty(t, full[i])
					assert.Equal(t, graph.KindDone, full[i][len(full[i])-1].Kind, "thread %s", thread)
				} else {
					require.ErrorIs(t, fullErr[i], graph.ErrInterrupted, "thread %s", thread)
				}
				checkNodesBalanced(t, full[i])
			}
			_, err := finish(ctx, fresh, thread, approves(i))
			require.NoError(t, err, "thread %s", thread)
			msgs := checkThread(t, fresh, thread)
			checkAnswers(t, msgs, thread, i, 1)
			// A payment that was approved is made once, but a run left
			// after it paid and before it saved the answer pays again.
			inv := invoiceOf(thread, i, 1)
			if strings.HasPrefix(inv, "auto-") || approves(i) {
				assert.GreaterOrEqual(t, w.paid.get(inv), 1, "payments of %s", inv)
			} else {
				assert.Zero(t, w.paid.get(inv), "payments of %s", inv)
			}
		}
	})
}

// Runs of a supervisor team are cancelled at many different points (after
// a checkpoint or a write is saved, as a model or a tool is called, in the
// supervisor's run or a worker's nested one) while other threads run. A
// fresh team over the same store then finishes every thread: each call is
// answered exactly once, histories are whole, and the next turn runs.
func TestStressCancelledAtRandomPointsThenResumed(t *testing.T) {
	slow(t)
	eachStressStore(t, func(t *testing.T, saver state.Saver, n int) {
		c := newChaos()
		w := newWorld()
		w.c = c
		team := supervisorTeam(t, chaosSaver{Saver: saver, c: c}, w, stressExecutor(), c)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			thread := fmt.Sprintf("chaos-%d", i)
			ctx, cancel := context.WithCancel(context.Background())
			c.arm(thread, i%23+1, cancel)
			wg.Go(func() {
				defer cancel()
				_, errs[i] = team.Invoke(ctx, agent.Ask(turnText(thread, i, 1)), graph.WithThread(thread))
			})
		}
		wg.Wait()

		c.stop()
		fresh := supervisorTeam(t, saver, w, stressExecutor(), nil)
		ctx := context.Background()
		for i := range n {
			thread := fmt.Sprintf("chaos-%d", i)
			if err := errs[i]; err != nil && !errors.Is(err, graph.ErrInterrupted) {
				require.ErrorIs(t, err, context.Canceled, "thread %s", thread)
				require.True(t, c.fired(thread), "thread %s was cancelled by its target", thread)
			}
			_, err := finish(ctx, fresh, thread, approves(i))
			require.NoError(t, err, "thread %s", thread)
			_, err = agent.Continue(ctx, fresh, thread, turnText(thread, i, 2))
			if !errors.Is(err, graph.ErrInterrupted) {
				require.NoError(t, err, "thread %s", thread)
			}
			_, err = finish(ctx, fresh, thread, approves(i))
			require.NoError(t, err, "thread %s", thread)
			msgs := checkThread(t, fresh, thread)
			assert.Equal(t, 2, userTurns(msgs), "thread %s", thread)
			for turn := 1; turn <= 2; turn++ {
				checkTeamAnswers(t, msgs, thread, i, turn)
			}
			inv := invoiceOf(thread, i, 2)
			if strings.HasPrefix(inv, "auto-") || approves(i) {
				assert.Equal(t, 1, w.paid.get(inv), "payments of %s", inv)
			}
		}
	})
}

// A tool call that a Timeout middleware gave up on keeps running, with the
// context of the node that made it. The engine reuses the run's own context
// for the nodes of later supersteps; the call's context is detached from it
// (graph.Detach), so the call still sees, and acts as, the node that made
// it, and its reads do not race with the engine's writes.
func TestAnAbandonedCallKeepsItsNode(t *testing.T) {
	release, seen := make(chan struct{}), make(chan string, 1)
	slow := tool.MustFunc("slow", "ignores its context for a while", func(ctx context.Context, _ struct{}) (string, error) {
		<-release
		seen <- fmt.Sprintf("%s@%d", graph.NodeName(ctx), graph.Step(ctx))
		return "late", nil
	})
	var late string
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "slow", `{}`)),
		scripted.Func(func(*model.Request) (*model.Response, error) {
			// The call timed out; the agent's node runs now.
			close(release)
			late = <-seen
			return &model.Response{Message: model.Assistant("done")}, nil
		}),
	)
	exec := executor.Parallel(executor.WithMiddleware(middleware.Timeout(20 * time.Millisecond)))
	g, err := agent.NewReAct(m, agent.WithTools(slow), agent.WithExecutor(exec))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Contains(t, toolMessage(t, out.Messages, "c1").Text(), "timed out")
	assert.Equal(t, "tools@1", late, "the abandoned call still belongs to the tools node of superstep 1")
}

// A tool asks a human, gets the answer on resume, then fails transiently;
// middleware.Retry runs it again within the same call. The retried attempt
// gets the same answer, as a node retried by the engine does: each
// invocation of a call numbers its interrupts from the start, so the thread
// does not pause to ask the human a second time.
func TestRetriedCallKeepsItsAnswer(t *testing.T) {
	w := newTally()
	pay := tool.MustFunc("pay", "pays once a human approves", func(ctx context.Context, _ struct{}) (string, error) {
		ok, err := graph.Interrupt[bool](ctx, "approve?")
		if err != nil {
			return "", err
		}
		w.add("attempt")
		if w.get("attempt") == 1 {
			return "", middleware.Transient(errors.New("bank busy"))
		}
		return map[bool]string{true: "paid", false: "declined"}[ok], nil
	})
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "pay", `{}`)), scripted.Reply("ok"))
	exec := executor.Parallel(executor.WithMiddleware(middleware.Retry(middleware.WithMaxAttempts(3), middleware.WithClock(instantClock{}))))
	g, err := agent.NewReAct(m, agent.WithTools(pay), agent.WithExecutor(exec), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Invoke(ctx, agent.Ask("go"), graph.WithThread("retry"))
	require.ErrorIs(t, err, graph.ErrInterrupted)
	out, err := g.Resume(ctx, "retry", graph.WithResumeValue(true))
	require.NoError(t, err, "the retried attempt gets the answer already given")
	assert.Equal(t, "paid", toolMessage(t, out.Messages, "c1").Text())
	assert.Equal(t, 2, w.get("attempt"))
}
