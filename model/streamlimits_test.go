package model_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/model"
)

func TestStreamLimitsDefaultsFillOnlyZeroFields(t *testing.T) {
	assert.Equal(t, model.StreamLimits{
		IdleTimeout:   model.DefaultStreamIdleTimeout,
		MaxEventBytes: model.DefaultMaxStreamEventBytes,
		MaxBytes:      model.DefaultMaxStreamBytes,
	}, model.StreamLimits{}.WithDefaults())
	l := model.StreamLimits{IdleTimeout: -1, MaxEventBytes: 10, MaxBytes: 20}
	assert.Equal(t, l, l.WithDefaults())
	assert.NoError(t, l.Check())
	assert.ErrorContains(t, model.StreamLimits{MaxBytes: -1}.Check(), "must not be negative")
	assert.False(t, model.IsTransient(model.ErrStreamIdle), "a silent server is not retried")
}
