package modelmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

func TestRateLimitHoldsACallWhoseTokensDoNotFit(t *testing.T) {
	base := scripted.New(scripted.Reply("a"), scripted.Reply("b"))
	base.Fallback = ptr(scripted.Reply("more"))
	m := modelmw.Chain(base, modelmw.RateLimit(modelmw.RateLimits{TokensPerMinute: 100}))
	req := userReq("x")
	req.Settings.MaxTokens = 80
	_, err := m.Generate(t.Context(), req)
	require.NoError(t, err, "the first call fits the bucket")
	// The bucket refills at 100 tokens a minute: the second call would wait
	// about 40 s, past its deadline, and fails at once without waiting.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err = m.Generate(ctx, req)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 4*time.Second)
	assert.Equal(t, 1, base.Calls(), "the held call never reached the model")
}

func TestRateLimitCountsRequests(t *testing.T) {
	base := scripted.New()
	base.Fallback = ptr(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.RateLimit(modelmw.RateLimits{RequestsPerMinute: 2}))
	for range 2 {
		_, err := m.Generate(t.Context(), userReq("x"))
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := textOf(m.Stream(ctx, userReq("x")))
	require.Error(t, err, "a third request within the minute waits past its deadline")
	assert.Equal(t, 2, base.Calls())
}

func ptr[T any](v T) *T { return &v }

func TestCacheAnswersARepeatedConversationWhateverItsIDs(t *testing.T) {
	base := scripted.New(scripted.Reply("first answer").WithUsage(model.Usage{InputTokens: 9, OutputTokens: 2}))
	store := modelmw.NewMemoryCache(10, time.Hour)
	m := modelmw.Chain(base, modelmw.Cache(store))
	conv := func(callID, msgID string) *model.Request {
		call := model.Assistant("", model.ToolCall{ID: callID, Name: "lookup", Arguments: []byte(`{"q":"x"}`)})
		call.ID = msgID
		return &model.Request{Messages: []model.Message{model.User("find x"), call, model.ToolMessage(callID, "lookup", false, model.TextPart("x is 1"))}}
	}
	ledger := modelmw.NewLedger()
	ctx := modelmw.WithLedger(t.Context(), ledger)
	resp, err := m.Generate(ctx, conv("call_a", "m1"))
	require.NoError(t, err)
	assert.Equal(t, "first answer", resp.Message.Text())

	text, err := textOf(m.Stream(ctx, conv("call_b", "m2")))
	require.NoError(t, err)
	assert.Equal(t, "first answer", text, "the same conversation with other IDs hits")
	again, err := m.Generate(ctx, conv("call_c", "m3"))
	require.NoError(t, err)
	assert.Zero(t, again.Usage, "a cached reply spent nothing")
	assert.Equal(t, 1, base.Calls())
	assert.Equal(t, 1, ledger.Report().Calls)

	_, err = m.Generate(ctx, userReq("something else"))
	assert.ErrorIs(t, err, scripted.ErrExhausted, "a different request misses")
}

func TestCacheStoresAStreamThatEnded(t *testing.T) {
	base := scripted.New(scripted.Reply("streamed once"))
	m := modelmw.Chain(base, modelmw.Cache(modelmw.NewMemoryCache(0, 0)))
	for range 2 {
		text, err := textOf(m.Stream(t.Context(), userReq("x")))
		require.NoError(t, err)
		assert.Equal(t, "streamed once", text)
	}
	assert.Equal(t, 1, base.Calls())
}

func TestCacheKeyDependsOnTheModelAndTheRequest(t *testing.T) {
	a, err := modelmw.CacheKey(model.Info{Provider: "p", Name: "a"}, userReq("x"))
	require.NoError(t, err)
	b, err := modelmw.CacheKey(model.Info{Provider: "p", Name: "b"}, userReq("x"))
	require.NoError(t, err)
	c, err := modelmw.CacheKey(model.Info{Provider: "p", Name: "a"}, userReq("y"))
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, a, c)
}

func TestMemoryCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	c := modelmw.NewMemoryCache(2, 0)
	ctx := t.Context()
	for _, k := range []string{"a", "b"} {
		require.NoError(t, c.Set(ctx, k, &model.Response{Message: model.Assistant(k)}))
	}
	_, ok, _ := c.Get(ctx, "a") // a is now the most recent
	require.True(t, ok)
	require.NoError(t, c.Set(ctx, "c", &model.Response{Message: model.Assistant("c")}))
	_, ok, _ = c.Get(ctx, "b")
	assert.False(t, ok)
	got, ok, _ := c.Get(ctx, "a")
	require.True(t, ok)
	assert.Equal(t, "a", got.Message.Text())
}

func TestBudgetStopsBeforeTheCallThatWouldExceedIt(t *testing.T) {
	u := model.Usage{InputTokens: 400, OutputTokens: 100}
	base := scripted.New(scripted.Reply("one").WithUsage(u), scripted.Reply("two").WithUsage(u))
	m := modelmw.Chain(base, modelmw.Budget(modelmw.BudgetPolicy{MaxTokens: 600}))
	ctx := modelmw.WithLedger(t.Context(), modelmw.NewLedger())
	req := userReq(strings.Repeat("word ", 40)) // 54 tokens by the estimate
	req.Settings.MaxTokens = 100
	_, err := m.Generate(ctx, req)
	require.NoError(t, err, "500 spent after this call")
	_, err = textOf(m.Stream(ctx, req))
	var be *modelmw.BudgetError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, modelmw.ErrBudgetExceeded)
	assert.Equal(t, 500, be.Spent.TotalTokens)
	assert.Equal(t, 600, be.MaxTokens)
	assert.Equal(t, 154, be.Next, "54 tokens of prompt and 100 of reply at most")
	assert.Equal(t, 1, base.Calls(), "the refused call was not made")
}

func TestBudgetByCost(t *testing.T) {
	u := model.Usage{InputTokens: 1_000_000, OutputTokens: 0}
	base := scripted.New(scripted.Reply("one").WithUsage(u), scripted.Reply("two").WithUsage(u))
	base.Name = "m"
	m := modelmw.Chain(base, modelmw.Budget(modelmw.BudgetPolicy{MaxCost: 1.5, Prices: modelmw.Prices{"m": {Input: 1}}}))
	_, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err, "without a ledger in the context the budget counts in its own")
	_, err = m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err, "1.00 spent; the next call's prompt costs next to nothing")
	_, err = m.Generate(t.Context(), userReq("x"))
	var be *modelmw.BudgetError
	require.True(t, errors.As(err, &be))
	assert.InDelta(t, 2.0, be.SpentCost, 1e-9)
	assert.Equal(t, 2, base.Calls())
}

func TestRateLimitChargesTheTokensAReplyUsedBeyondItsReservation(t *testing.T) {
	base := scripted.New(scripted.Reply("long").WithUsage(model.Usage{InputTokens: 5, OutputTokens: 99_995}))
	base.Fallback = ptr(scripted.Reply("more"))
	m := modelmw.Chain(base, modelmw.RateLimit(modelmw.RateLimits{TokensPerMinute: 100_000}))
	_, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err, "the call reserves its prompt only: about 5 tokens")
	// The reply used the whole bucket. Without the charge for it, 99,995
	// tokens would be left and this call of 50,000 would go at once; with
	// it the bucket refills for about 30 s, past the deadline.
	req := userReq("x")
	req.Settings.MaxTokens = 50_000
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = m.Generate(ctx, req)
	require.Error(t, err)
	assert.Equal(t, 1, base.Calls(), "the held call never reached the model")
}

func TestBudgetCountsThePromptWithItsCounter(t *testing.T) {
	base := scripted.New()
	base.Fallback = ptr(scripted.Reply("ok"))
	counted := 0
	counter := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) {
		counted++
		return 2_000, nil
	})
	m := modelmw.Chain(base, modelmw.Budget(modelmw.BudgetPolicy{MaxTokens: 1_000, Counter: counter}))
	_, err := m.Generate(modelmw.WithLedger(t.Context(), modelmw.NewLedger()), userReq("x"))
	var be *modelmw.BudgetError
	require.ErrorAs(t, err, &be, "the counter's 2,000 tokens are over the limit; the estimate's 5 are not")
	assert.Equal(t, 2_000, be.Next)
	assert.Equal(t, 1, counted)
	assert.Zero(t, base.Calls())

	broken := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) {
		return 0, errors.New("count endpoint down")
	})
	m = modelmw.Chain(base, modelmw.Budget(modelmw.BudgetPolicy{MaxTokens: 1_000, Counter: broken}))
	_, err = m.Generate(modelmw.WithLedger(t.Context(), modelmw.NewLedger()), userReq("x"))
	require.NoError(t, err, "a counter that fails leaves the check to the estimate")
	assert.Equal(t, 1, base.Calls())
}

func TestRateLimitCountsThePromptWithItsCounter(t *testing.T) {
	base := scripted.New()
	base.Fallback = ptr(scripted.Reply("ok"))
	counter := modelmw.TokenCounterFunc(func(context.Context, *model.Request) (int, error) { return 60_000, nil })
	m := modelmw.Chain(base, modelmw.RateLimit(modelmw.RateLimits{TokensPerMinute: 100_000, Counter: counter}))
	_, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err)
	// By the estimate the second prompt would take 5 tokens of the 40,000
	// left; by the counter it takes 60,000 and waits about 12 s.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = m.Generate(ctx, userReq("x"))
	require.Error(t, err)
	assert.Equal(t, 1, base.Calls())
}
