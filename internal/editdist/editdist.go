package editdist

// Levenshtein returns the Levenshtein distance between a and b, counted in
// bytes: the fewest insertions, deletions and substitutions that turn one
// into the other. It is written here rather than taken from a library
// (github.com/agnivade/levenshtein counts runes) so that graph, which
// imports almost nothing, gains no dependency for a dozen lines.
func Levenshtein(a, b string) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
