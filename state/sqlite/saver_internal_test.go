package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnectionSettings checks what Open promises of every connection.
func TestConnectionSettings(t *testing.T) {
	tests := []struct {
		name        string
		opts        []Option
		busyMillis  int
		synchronous int // 1 NORMAL, 2 FULL
	}{
		{"defaults", nil, 5000, 1},
		{"full and a longer timeout", []Option{WithSynchronous(SynchronousFull), WithBusyTimeout(12 * time.Second)}, 12000, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "settings.db"), tt.opts...)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()

			// Pin several connections at once, so more than the first is checked.
			ctx := t.Context()
			for range 3 {
				conn, err := s.db.Conn(ctx)
				require.NoError(t, err)
				defer conn.Close()
				var mode string
				var busy, sync int
				require.NoError(t, conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode))
				require.NoError(t, conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy))
				require.NoError(t, conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync))
				assert.Equal(t, "wal", mode)
				assert.Equal(t, tt.busyMillis, busy)
				assert.Equal(t, tt.synchronous, sync)
			}
		})
	}
}

func TestMigrationsMatchSchemaVersion(t *testing.T) {
	assert.Len(t, migrations(), SchemaVersion)
}
