package state_test

import (
	"fmt"

	"github.com/trellis-go/trellis/state"
)

// Append sees what each task added past its input and concatenates the
// additions in node order.
func ExampleAppend() {
	current := []string{"start"}
	merged, _ := state.Append[string]()(current, []state.Change[[]string]{
		{Node: "a", Before: current, After: []string{"start", "from a"}},
		{Node: "b", Before: current, After: []string{"start", "from b"}},
	})
	fmt.Println(merged)
	// Output: [start from a from b]
}

// Sum adds each task's difference to the current value.
func ExampleSum() {
	total, _ := state.Sum[int]()(10, []state.Change[int]{
		{Node: "a", Before: 10, After: 12},
		{Node: "b", Before: 10, After: 15},
	})
	fmt.Println(total)
	// Output: 17
}

// Fold turns a plain two-argument function into a reducer.
func ExampleFold() {
	maxOf := state.Fold(func(acc, v int) int { return max(acc, v) })
	v, _ := maxOf(3, []state.Change[int]{{Node: "a", After: 9}, {Node: "b", After: 4}})
	fmt.Println(v)
	// Output: 9
}
