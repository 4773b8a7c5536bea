package sqlstore

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store/internal/engine"
)

// GetMany returns exactly the live rows among the keys it is given, with
// their vectors, however many statements the keys take: rows of other
// namespaces with the same key, missing keys and expired rows are left
// out.
func TestGetManyReturnsTheLiveRowsAmongItsKeys(t *testing.T) {
	for name, open := range drivers() {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			const n = 2*maxGetMany + 17 // three statements
			var ws []engine.Write
			for i := range n {
				w := engine.Write{NS: "a\x1f", Key: fmt.Sprintf("k%04d", i), Value: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i)), Vector: []float32{float32(i), 1}}
				if i%10 == 0 {
					w.ExpiresAt = now.Add(-time.Second) // expired
				}
				ws = append(ws, w)
			}
			ws = append(ws, engine.Write{NS: "b\x1f", Key: "k0001", Value: json.RawMessage(`{"other": true}`)})
			_, err := d.Apply(t.Context(), ws, now.Add(-time.Hour))
			require.NoError(t, err)

			var keys []engine.Key
			var want []string
			for i := range n + 5 { // five keys that were never written
				keys = append(keys, engine.Key{NS: "a\x1f", Key: fmt.Sprintf("k%04d", i)})
				if i < n && i%10 != 0 {
					want = append(want, fmt.Sprintf("k%04d", i))
				}
			}
			rows, err := d.GetMany(t.Context(), keys, now)
			require.NoError(t, err)
			var got []string
			for _, r := range rows {
				assert.Equal(t, "a\x1f", r.NS)
				var v struct{ I int }
				require.NoError(t, json.Unmarshal(r.Value, &v))
				assert.Equal(t, r.Key, fmt.Sprintf("k%04d", v.I))
				assert.Equal(t, []float32{float32(v.I), 1}, r.Vector, "the row comes with its vector")
				got = append(got, r.Key)
			}
			sort.Strings(got)
			assert.Equal(t, want, got)

			none, err := d.GetMany(t.Context(), nil, now)
			require.NoError(t, err)
			assert.Empty(t, none)
		})
	}
}
