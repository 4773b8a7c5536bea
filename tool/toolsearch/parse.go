package toolsearch

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// parseSelection reads the tool names of a model's answer, in order,
// trimmed, without empty names or duplicates. It reads the JSON the prompt
// asks for ({"tools": ["a", "b"]}) and what models write instead: the JSON
// in a Markdown fence or after prose, almost-JSON that tool.RepairJSON
// mends, a bare array, an object whose only list holds the names under
// another key, a single name in place of the list, and entries that are
// objects naming the tool ({"name": "a", "reason": "..."}). An empty list
// is an answer (no tool is relevant); a reply with no list of names is an
// error wrapping ErrUnusableAnswer.
func parseSelection(text string) ([]string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("%w: the reply is empty", ErrUnusableAnswer)
	}
	raw, err := tool.RepairJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%w: %w (reply %q)", ErrUnusableAnswer, err, textcut.Clip(text, 80, "..."))
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusableAnswer, err)
	}
	list, ok := listOf(v)
	if !ok {
		return nil, fmt.Errorf("%w: no list of tool names in reply %q", ErrUnusableAnswer, textcut.Clip(text, 80, "..."))
	}
	names := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, e := range list {
		n, ok := nameOf(e)
		if !ok || seen[n] {
			continue
		}
		seen[n] = true
		names = append(names, n)
	}
	if len(names) == 0 && len(list) > 0 {
		return nil, fmt.Errorf("%w: the list in reply %q holds no tool names", ErrUnusableAnswer, textcut.Clip(text, 80, "..."))
	}
	return names, nil
}

// listOf finds the list of names in an answer: the answer itself when it
// is an array, else the value of its "tools" member (any case), else its
// only array member. A string in place of the list is a list of one.
func listOf(v any) ([]any, bool) {
	switch v := v.(type) {
	case []any:
		return v, true
	case map[string]any:
		if x, ok := v["tools"]; ok {
			return asList(x)
		}
		for k, x := range v {
			if strings.EqualFold(k, "tools") {
				return asList(x)
			}
		}
		var only []any
		found := 0
		for _, x := range v {
			if l, ok := x.([]any); ok {
				only = l
				found++
			}
		}
		if found == 1 {
			return only, true
		}
	}
	return nil, false
}

func asList(x any) ([]any, bool) {
	switch x := x.(type) {
	case []any:
		return x, true
	case string:
		return []any{x}, true
	case nil:
		return nil, true
	}
	return nil, false
}

// nameOf reads one entry of the list: a string, or an object with a
// string "name" (or "tool") member.
func nameOf(e any) (string, bool) {
	var s string
	switch e := e.(type) {
	case string:
		s = e
	case map[string]any:
		for _, k := range []string{"name", "tool", "tool_name"} {
			if n, ok := e[k].(string); ok {
				s = n
				break
			}
		}
	}
	s = strings.TrimSpace(s)
	return s, s != ""
}
