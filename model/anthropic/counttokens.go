package anthropic

import (
	"context"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/trellis-go/trellis/model"
)

// CountTokens asks the Messages API's count_tokens endpoint how many input
// tokens req would take with the model: the count is the API's own, system
// prompt, tools and images included. It makes the Model a
// modelmw.TokenCounter. The request is mapped as Generate maps it, so a
// request Generate refuses is refused here too; server tools (WithWebSearch
// and the like) are left out of the count. Transient failures are retried
// by the model's retry policy.
func (m *Model) CountTokens(ctx context.Context, req *model.Request) (int, error) {
	p, err := m.params(req)
	if err != nil {
		return 0, err
	}
	c := sdk.MessageCountTokensParams{
		Messages:     p.Messages,
		Model:        p.Model,
		OutputConfig: p.OutputConfig,
		Thinking:     p.Thinking,
		ToolChoice:   p.ToolChoice,
	}
	if len(p.System) > 0 {
		c.System = sdk.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System}
	}
	for _, t := range p.Tools {
		if t.OfTool != nil {
			c.Tools = append(c.Tools, sdk.MessageCountTokensToolUnionParam{OfTool: t.OfTool})
		}
	}
	if len(c.Tools) == 0 {
		c.ToolChoice = sdk.ToolChoiceUnionParam{} // no choice without tools
	}
	var n int64
	err = m.retry.Do(ctx, func(ctx context.Context) error {
		r, err := m.client.Messages.CountTokens(ctx, c)
		if err != nil {
			return convertError(err)
		}
		n = r.InputTokens
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("anthropic: counting tokens: %w", err)
	}
	return int(n), nil
}
