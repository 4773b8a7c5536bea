package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
)

func TestTransientErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "40P01", Message: "deadlock detected"}, true},
		{&pgconn.PgError{Code: "40001", Message: "could not serialize access"}, true},
		{fmt.Errorf("put writes: %w", &pgconn.PgError{Code: "40P01"}), true},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key"}, false},
		{&pgconn.PgError{Code: "57014", Message: "canceling statement"}, false},
		{context.Canceled, false},
		{errors.New("deadlock detected"), false}, // the code decides, never the text
	} {
		assert.Equal(t, tc.want, transient(tc.err), "%v", tc.err)
	}
}
