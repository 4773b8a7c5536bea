package toolsearch

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/plan"
)

// DefaultSystemPrompt is the system message sent to the model unless
// WithSystemPrompt replaces it.
const DefaultSystemPrompt = "You choose the tools an assistant will be offered for a user's request. " +
	"You are given the request, possibly the conversation before it, and a catalogue of tools, " +
	"each with its name and what it does. Pick the tools the assistant may need to fulfil the request, " +
	"including tools for steps the request implies; leave out the rest. " +
	"You do not answer the request and you call no tools: you answer with JSON only."

// Limits on what is sent, in bytes: long texts are cut, with a mark.
const (
	maxRequestBytes     = 4000
	maxHistoryBytes     = 600
	maxDescriptionBytes = 300
	cutMark             = " [...]"
)

// answerName names the answer's schema in the request's response format.
const answerName = "tool_selection"

// turn is the request the selector judges relevance against: the latest
// user message and the messages before it that it shows for context.
type turn struct {
	request string
	history []model.Message
}

// requestOf finds the request in a run's conversation: the latest user
// message (a plan nudge is not one: it repeats the request's plan, not a
// new request), and up to history messages with text before it. It
// reports false when there is no user message, or the latest has no text.
func requestOf(msgs []model.Message, history int) (turn, bool) {
	at := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser && !isNudge(msgs[i]) {
			at = i
			break
		}
	}
	if at < 0 {
		return turn{}, false
	}
	text := strings.TrimSpace(msgs[at].Text())
	if text == "" {
		return turn{}, false
	}
	t := turn{request: text}
	for i := at - 1; i >= 0 && len(t.history) < history; i-- {
		m := msgs[i]
		if (m.Role != model.RoleUser && m.Role != model.RoleAssistant) || isNudge(m) || strings.TrimSpace(m.Text()) == "" {
			continue
		}
		t.history = append(t.history, m)
	}
	// Oldest first.
	for i, j := 0, len(t.history)-1; i < j; i, j = i+1, j-1 {
		t.history[i], t.history[j] = t.history[j], t.history[i]
	}
	return t, true
}

func isNudge(m model.Message) bool {
	_, ok := m.Metadata[plan.MetaNudge]
	return ok
}

// userPrompt is the user message of the selector's request: the
// conversation for context, the request, the catalogue of candidates and
// the form of the answer.
func userPrompt(t turn, defs []model.ToolDefinition, limit int) string {
	var b strings.Builder
	if len(t.history) > 0 {
		b.WriteString("Conversation before the request, for context:\n")
		for _, m := range t.history {
			fmt.Fprintf(&b, "%s: %s\n", m.Role, oneLine(textcut.Clip(strings.TrimSpace(m.Text()), maxHistoryBytes, cutMark)))
		}
		b.WriteString("\n")
	}
	b.WriteString("Request:\n")
	b.WriteString(textcut.Clip(t.request, maxRequestBytes, cutMark))
	b.WriteString("\n\nTools:\n")
	for _, d := range defs {
		b.WriteString("- ")
		b.WriteString(d.Name)
		if desc := oneLine(d.Description); desc != "" {
			b.WriteString(": ")
			b.WriteString(textcut.Clip(desc, maxDescriptionBytes, cutMark))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nAnswer with a JSON object of the form {\"tools\": [\"name\", ...]} listing the names of "+
		"at most %d tools from the list above that are relevant to the request, the most relevant first. "+
		"Write the names exactly as listed. If no tool is relevant, answer {\"tools\": []}.", limit)
	return b.String()
}

// oneLine returns s with its runs of white space made single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// responseFormat is the schema of the answer: an object whose "tools" are
// names of the candidates.
func responseFormat(defs []model.ToolDefinition) *model.ResponseFormat {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"tools": map[string]any{
				"type":        "array",
				"description": "names of the relevant tools, the most relevant first",
				"items":       map[string]any{"type": "string", "enum": names},
			},
		},
		"required":             []string{"tools"},
		"additionalProperties": false,
	}
	raw, _ := json.Marshal(schema) // strings and maps only: it cannot fail
	return &model.ResponseFormat{
		Name:        answerName,
		Description: "the tools relevant to the request",
		Schema:      raw,
		Strict:      true,
	}
}

// cacheKey is a digest of everything the model's answer depends on.
func cacheKey(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return string(h.Sum(nil))
}
