package chatspan_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/internal/chatspan"
	"github.com/trellis-go/trellis/model"
)

func TestStartWithoutProvidersReportsNothing(t *testing.T) {
	ctx := t.Context()
	got, span := chatspan.Start(ctx, "scope", nil, nil, chatspan.Call{Model: "m"}, &model.Request{})
	assert.Nil(t, span)
	assert.Equal(t, ctx, got)
	span.End(ctx, nil, errors.New("ignored")) // a nil span ends quietly
}

func TestErrorTypeIsBounded(t *testing.T) {
	assert.Equal(t, "cancelled", chatspan.ErrorType(fmt.Errorf("x: %w", context.Canceled)))
	assert.Equal(t, "timeout", chatspan.ErrorType(context.DeadlineExceeded))
	assert.Equal(t, "529", chatspan.ErrorType(&model.ProviderError{StatusCode: 529}))
	assert.Equal(t, "*errors.errorString", chatspan.ErrorType(errors.New("a message that must not appear")))
}
