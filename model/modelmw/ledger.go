package modelmw

import (
	"context"
	"iter"
	"maps"
	"sync"

	"github.com/trellis-go/trellis/model"
)

// Ledger accumulates the token usage of a run's model calls: in all, per
// model and per agent. Put one in the context a run starts with
// (WithLedger); every chain (see Chain) adds the usage of each call its
// model answers, and Budget reads it before each call. A Ledger is safe
// for concurrent use; the zero value is ready to use.
type Ledger struct {
	mu      sync.Mutex
	calls   int
	total   model.Usage
	byModel map[string]model.Usage
	byAgent map[string]model.Usage
}

// NewLedger returns an empty Ledger.
func NewLedger() *Ledger { return &Ledger{} }

// Add records the usage of one call answered by the named model for the
// named agent ("" when the call was made for no agent).
func (l *Ledger) Add(agent, modelName string, u model.Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byModel == nil {
		l.byModel, l.byAgent = map[string]model.Usage{}, map[string]model.Usage{}
	}
	l.calls++
	l.total = l.total.Add(u)
	l.byModel[modelName] = l.byModel[modelName].Add(u)
	l.byAgent[agent] = l.byAgent[agent].Add(u)
}

// Total returns the usage recorded so far.
func (l *Ledger) Total() model.Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Report returns a copy of what the ledger recorded so far.
func (l *Ledger) Report() Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Report{Calls: l.calls, Total: l.total, ByModel: maps.Clone(l.byModel), ByAgent: maps.Clone(l.byAgent)}
}

// Cost returns what the recorded usage costs by prices (see Prices.Cost).
func (l *Ledger) Cost(prices Prices) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return prices.costOf(maps.All(l.byModel))
}

// Report is a Ledger's account of a run's usage.
type Report struct {
	// Calls counts the calls recorded.
	Calls int `json:"calls"`
	// Total is the usage of every call.
	Total model.Usage `json:"total"`
	// ByModel is the usage per model, by the name the provider reported
	// (or the model's own, when it reported none).
	ByModel map[string]model.Usage `json:"by_model,omitempty"`
	// ByAgent is the usage per agent (see WithAgent); calls made for no
	// agent are under "".
	ByAgent map[string]model.Usage `json:"by_agent,omitempty"`
}

// ledgerKey is the context key of a run's Ledger.
type ledgerKey struct{}

// WithLedger returns ctx carrying l: the usage of the model calls made
// with it (or a context derived from it) is recorded in l.
func WithLedger(ctx context.Context, l *Ledger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

// LedgerFrom returns the Ledger ctx carries, or nil.
func LedgerFrom(ctx context.Context) *Ledger {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	return l
}

// Price is what a model's tokens cost, per million tokens, in the
// currency of the table it is in.
type Price struct {
	// Input is the price of a million prompt tokens not read from the
	// provider's cache.
	Input float64 `json:"input"`
	// CachedInput is the price of a million prompt tokens read from the
	// cache; zero means the Input price.
	CachedInput float64 `json:"cached_input,omitempty"`
	// Output is the price of a million reply tokens (reasoning included).
	Output float64 `json:"output"`
}

// Prices is a price table: the price of each model by the name providers
// report it under (model.Response.Model). The user supplies it; Trellis
// ships no prices.
type Prices map[string]Price

// Cost returns what u costs for the named model, and false when the table
// has no price for it.
func (p Prices) Cost(modelName string, u model.Usage) (float64, bool) {
	price, ok := p[modelName]
	if !ok {
		return 0, false
	}
	cachedPrice := price.CachedInput
	if cachedPrice == 0 {
		cachedPrice = price.Input
	}
	cached := min(u.CachedInputTokens, u.InputTokens)
	return (float64(u.InputTokens-cached)*price.Input +
		float64(cached)*cachedPrice +
		float64(u.OutputTokens)*price.Output) / 1e6, true
}

// costOf sums the cost of usage per model; models without a price cost
// nothing.
func (p Prices) costOf(byModel iter.Seq2[string, model.Usage]) float64 {
	var sum float64
	for name, u := range byModel {
		c, _ := p.Cost(name, u)
		sum += c
	}
	return sum
}

// recorder is the end of every chain: it records the usage of the calls
// its model answers into the Ledger of their context.
type recorder struct {
	next model.Model
}

func (r *recorder) name(resp string) string {
	if resp != "" {
		return resp
	}
	return Describe(r.next).Name
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := r.next.Generate(ctx, req)
	if l := LedgerFrom(ctx); l != nil && resp != nil {
		l.Add(Agent(ctx), r.name(orModel(resp.Model, req.Model)), resp.Usage)
	}
	return resp, err
}

func (r *recorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	l := LedgerFrom(ctx)
	if l == nil {
		return r.next.Stream(ctx, req)
	}
	return func(yield func(model.Chunk, error) bool) {
		var (
			usage *model.Usage
			name  string
		)
		defer func() {
			if usage != nil {
				l.Add(Agent(ctx), r.name(orModel(name, req.Model)), *usage)
			}
		}()
		for c, err := range r.next.Stream(ctx, req) {
			if c.Usage != nil {
				usage = c.Usage
			}
			if c.Model != "" {
				name = c.Model
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

func (r *recorder) Info() model.Info { return Describe(r.next) }

// orModel returns a, or b when a is empty.
func orModel(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
