package calc

import "testing"

func TestSumTo(t *testing.T) {
	for _, c := range []struct{ n, want int }{{-3, 0}, {0, 0}, {1, 1}, {4, 10}, {100, 5050}} {
		if got := SumTo(c.n); got != c.want {
			t.Errorf("SumTo(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}
