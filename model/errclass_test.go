package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/model"
)

func TestClassifyNamesTheClassOfProviderErrors(t *testing.T) {
	cases := []struct {
		name string
		err  *model.ProviderError
		want error
	}{
		{"429", &model.ProviderError{StatusCode: 429}, model.ErrRateLimited},
		{"429 quota", &model.ProviderError{StatusCode: 429, Code: "insufficient_quota"}, model.ErrQuotaExhausted},
		{"529", &model.ProviderError{StatusCode: 529, Type: "overloaded_error"}, model.ErrOverloaded},
		{"overloaded in a stream", &model.ProviderError{Type: "overloaded_error"}, model.ErrOverloaded},
		{"503", &model.ProviderError{StatusCode: 503}, model.ErrOverloaded},
		{"500", &model.ProviderError{StatusCode: 500}, model.ErrServer},
		{"openai context", &model.ProviderError{StatusCode: 400, Code: "context_length_exceeded"}, model.ErrContextTooLong},
		{"anthropic context", &model.ProviderError{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"}, model.ErrContextTooLong},
		{"413", &model.ProviderError{StatusCode: 413, Type: "request_too_large"}, model.ErrContextTooLong},
		{"400", &model.ProviderError{StatusCode: 400, Type: "invalid_request_error"}, model.ErrBadRequest},
		{"401", &model.ProviderError{StatusCode: 401}, model.ErrAuth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wrapped := fmt.Errorf("call: %w", c.err)
			assert.Same(t, c.want, model.Classify(wrapped))
			assert.ErrorIs(t, wrapped, c.want)
			for _, other := range []error{model.ErrRateLimited, model.ErrOverloaded, model.ErrContextTooLong, model.ErrBadRequest, model.ErrServer} {
				if other != c.want {
					assert.NotErrorIs(t, wrapped, other)
				}
			}
		})
	}
}

func TestClassifyLeavesCallerErrorsUnclassed(t *testing.T) {
	assert.Nil(t, model.Classify(nil))
	assert.Nil(t, model.Classify(context.Canceled))
	assert.Nil(t, model.Classify(errors.New("a bug")))
	assert.Same(t, model.ErrServer, model.Classify(fmt.Errorf("read: %w", errUnexpectedEOF())))
}

func errUnexpectedEOF() error { return fmt.Errorf("body: %w", io.ErrUnexpectedEOF) }
