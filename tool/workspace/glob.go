package workspace

import (
	"fmt"
	"path"
	"strings"
)

// glob is a compiled pattern: its segments, "**" standing for any number
// of path segments.
type glob struct {
	segs []string
}

// anyFile is the pattern that matches every file.
var anyFile = glob{segs: []string{"**"}}

// compileGlob checks pattern and splits it into segments. Empty segments
// and "." segments are dropped ("./src//*.go" is "src/*.go"); an absolute
// pattern, a ".." segment and a segment path.Match refuses are errors that
// name the pattern.
func compileGlob(pattern string) (glob, error) {
	if strings.HasPrefix(pattern, "/") {
		return glob{}, fmt.Errorf("pattern %q is absolute; write it relative to the workspace, such as \"**/*.go\"", clip(pattern))
	}
	expanded := pattern
	if strings.HasSuffix(pattern, "/") {
		expanded += "**" // a directory: everything below it
	}
	var segs []string
	for seg := range strings.SplitSeq(expanded, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return glob{}, fmt.Errorf("pattern %q has a \"..\" segment; patterns cannot reach outside the workspace", clip(pattern))
		case "**":
			// "**/**" is "**".
			if len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
		default:
			if _, err := path.Match(seg, ""); err != nil {
				return glob{}, fmt.Errorf("pattern %q is not a valid glob: the segment %q is malformed (use *, ?, [a-z] and \\ to escape)", clip(pattern), clip(seg))
			}
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return glob{}, fmt.Errorf("pattern %q names no files; try \"**/*\" for every file", clip(pattern))
	}
	return glob{segs: segs}, nil
}

// start returns the matcher's states before any segment is read: state i
// means the first i segments of the pattern are matched.
func (g glob) start() []bool {
	st := make([]bool, len(g.segs)+1)
	st[0] = true
	g.close(st)
	return st
}

// close adds to st the states a "**" reaches by matching no segment.
func (g glob) close(st []bool) {
	for i, seg := range g.segs {
		if st[i] && seg == "**" {
			st[i+1] = true
		}
	}
}

// step returns the states after reading one segment of a name.
func (g glob) step(st []bool, name string) []bool {
	next := make([]bool, len(st))
	for i, seg := range g.segs {
		if !st[i] {
			continue
		}
		if seg == "**" {
			next[i] = true
			continue
		}
		if ok, _ := path.Match(seg, name); ok {
			next[i+1] = true
		}
	}
	g.close(next)
	return next
}

// run returns the states after reading the segments of the slash-separated
// path p.
func (g glob) run(p string) []bool {
	st := g.start()
	for seg := range strings.SplitSeq(p, "/") {
		st = g.step(st, seg)
	}
	return st
}

// match reports whether the slash-separated path p matches g.
func (g glob) match(p string) bool { return g.run(p)[len(g.segs)] }

// mayMatchBelow reports whether some path below the directory dir may
// match g, so that a walk can skip directories that cannot.
func (g glob) mayMatchBelow(dir string) bool {
	st := g.run(dir)
	for _, ok := range st[:len(g.segs)] {
		if ok {
			return true
		}
	}
	return false
}

// Match reports whether name, a slash-separated path relative to the
// workspace, matches pattern in the syntax of the list_files and grep
// tools: a segment "**" matches any number of path segments (none
// included), and every other segment matches one segment of name by
// path.Match ("*" matches any run of characters but "/"). So "**/*.go"
// matches "main.go" and "cmd/app/main.go", and "*.go" only "main.go".
// A malformed pattern, an absolute one and one with a ".." segment are
// errors.
func Match(pattern, name string) (bool, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return false, err
	}
	return g.match(name), nil
}
