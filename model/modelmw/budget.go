package modelmw

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/trellis-go/trellis/model"
)

// ErrBudgetExceeded is matched by *BudgetError.
var ErrBudgetExceeded = errors.New("modelmw: budget exceeded")

// BudgetError reports a call that Budget refused because it would take a
// run beyond its budget. The call was not made.
type BudgetError struct {
	// Spent is the run's usage before the call.
	Spent model.Usage
	// SpentCost is what Spent cost by the budget's prices (zero without a
	// cost limit).
	SpentCost float64
	// Next is the tokens the refused call would have taken: its prompt's
	// and its Settings.MaxTokens.
	Next int
	// NextCost is what Next would have cost.
	NextCost float64
	// MaxTokens and MaxCost are the budget's limits.
	MaxTokens int
	MaxCost   float64
}

// Error says which limit the call would have passed.
func (e *BudgetError) Error() string {
	if e.MaxTokens > 0 && e.Spent.TotalTokens+e.Next > e.MaxTokens {
		return fmt.Sprintf("modelmw: budget exceeded: %d tokens spent and about %d more for the next call, over the limit of %d",
			e.Spent.TotalTokens, e.Next, e.MaxTokens)
	}
	return fmt.Sprintf("modelmw: budget exceeded: %.4f spent and about %.4f more for the next call, over the limit of %.4f",
		e.SpentCost, e.NextCost, e.MaxCost)
}

// Is reports whether target is ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// Permanent reports true: sending the call again cannot help.
func (e *BudgetError) Permanent() bool { return true }

// BudgetPolicy is the budget of Budget. A zero limit is no limit.
type BudgetPolicy struct {
	// MaxTokens caps the run's tokens, input and output together.
	MaxTokens int
	// MaxCost caps what the run's calls cost by Prices, in the currency
	// of the table.
	MaxCost float64
	// Prices is the price table of MaxCost. A model without a price costs
	// nothing.
	Prices Prices
	// Counter counts the next call's prompt tokens; nil estimates them
	// (EstimateTokens).
	Counter TokenCounter
}

// Budget returns a Middleware that refuses, with a *BudgetError, a call
// that would take the run beyond p: the usage the run's Ledger recorded
// so far, plus the call's prompt tokens and its Settings.MaxTokens (the
// most it may write; a request without MaxTokens counts its reply as
// nothing until it is answered). The run stops before the call, with the
// error (the LLM node returns it; errors.Is(err, ErrBudgetExceeded)).
//
// The run's Ledger is the one its context carries (WithLedger). A call
// whose context carries none is counted in a Ledger of the middleware's
// own, whose budget then spans every call made through it.
//
// Calls made at once (the agents of a parallel superstep) are checked
// against the usage recorded before each started, so together they may
// pass the limit by what they spend.
func Budget(p BudgetPolicy) Middleware {
	own := NewLedger()
	return func(next model.Model) model.Model {
		info := Describe(next)
		check := func(ctx context.Context, req *model.Request) (context.Context, error) {
			l := LedgerFrom(ctx)
			if l == nil {
				l = own
				ctx = WithLedger(ctx, own)
			}
			if p.MaxTokens <= 0 && p.MaxCost <= 0 {
				return ctx, nil
			}
			prompt := countOrEstimate(ctx, p.Counter, req)
			nextTokens := prompt + max(req.Settings.MaxTokens, 0)
			spent := l.Total()
			if spent.TotalTokens == 0 {
				spent.TotalTokens = spent.InputTokens + spent.OutputTokens
			}
			e := &BudgetError{Spent: spent, Next: nextTokens, MaxTokens: p.MaxTokens, MaxCost: p.MaxCost}
			if p.MaxTokens > 0 && spent.TotalTokens+nextTokens > p.MaxTokens {
				return ctx, e
			}
			if p.MaxCost > 0 {
				e.SpentCost = l.Cost(p.Prices)
				e.NextCost, _ = p.Prices.Cost(orModel(req.Model, info.Name), model.Usage{InputTokens: prompt, OutputTokens: max(req.Settings.MaxTokens, 0)})
				if e.SpentCost+e.NextCost > p.MaxCost {
					return ctx, e
				}
			}
			return ctx, nil
		}
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				ctx, err := check(ctx, req)
				if err != nil {
					return nil, err
				}
				return next.Generate(ctx, req)
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				ctx, err := check(ctx, req)
				if err != nil {
					return fail(err)
				}
				return next.Stream(ctx, req)
			},
		}
	}
}
