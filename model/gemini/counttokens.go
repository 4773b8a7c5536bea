package gemini

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
)

// CountTokens asks the countTokens endpoint how many tokens req's
// conversation takes with the model, which makes the Model a
// modelmw.TokenCounter. The request is mapped as Generate maps it. The
// Gemini API's endpoint counts contents only: the system instruction is
// counted as a first user turn (within a few tokens of its real cost), and
// tool definitions, which it does not take, are added by
// modelmw.EstimateTokens. Transient failures are retried by the model's
// retry policy; each attempt is bounded by the model's timeout.
func (m *Model) CountTokens(ctx context.Context, req *model.Request) (int, error) {
	name, contents, cfg, err := m.request(req)
	if err != nil {
		return 0, err
	}
	if cfg.SystemInstruction != nil {
		sys := *cfg.SystemInstruction
		sys.Role = genai.RoleUser
		contents = append([]*genai.Content{&sys}, contents...)
	}
	var n int32
	err = m.retry.Do(ctx, func(ctx context.Context) error {
		if m.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, m.timeout)
			defer cancel()
		}
		ctx, hit := attempt(ctx)
		r, err := m.countTokens(ctx, name, contents)
		if err != nil {
			return convertError(hit.or(err))
		}
		n = r.TotalTokens
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("gemini: counting tokens: %w", err)
	}
	tools := 0
	if len(req.Tools) > 0 {
		tools = modelmw.EstimateTokens(&model.Request{Tools: req.Tools})
	}
	return int(n) + tools, nil
}

// countTokens calls the SDK, its panics made errors.
func (m *Model) countTokens(ctx context.Context, name string, contents []*genai.Content) (r *genai.CountTokensResponse, err error) {
	defer sdkPanic(&err)
	return m.client.Models.CountTokens(ctx, name, contents, nil)
}
