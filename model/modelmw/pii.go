package modelmw

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/model"
)

// The replacements RedactPII puts in place of what it finds.
const (
	RedactedEmail = "[email]"
	RedactedPhone = "[phone]"
	RedactedCard  = "[card]"
)

var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	// Card numbers: 13 to 19 digits, in groups separated by spaces or
	// dashes; only those that pass the Luhn check are redacted.
	cardRE = regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`)
	// Phone numbers: an optional +country code, then 7 to 15 digits in
	// groups separated by spaces, dots, dashes or parentheses.
	phoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .\-]?)?(?:\(\d{1,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]\d{2,4}){1,4}\b`)
)

// RedactText returns text with e-mail addresses, payment card numbers
// (those that pass the Luhn check) and phone numbers replaced by
// RedactedEmail, RedactedCard and RedactedPhone. It is an example of
// redaction with regular expressions, not a complete detector of
// personal data: it finds what is written in the common formats only.
//
// Redacting is idempotent: RedactText(RedactText(s)) == RedactText(s).
// One pass can expose new matches (a replacement ends a run of digits
// and so gives a shorter run the word boundary it lacked), so passes
// repeat until the text stops changing; each changing pass removes at
// least one digit or '@', so the loop ends.
func RedactText(text string) string {
	for {
		next := redactOnce(text)
		if next == text {
			return text
		}
		text = next
	}
}

// redactOnce is one pass of RedactText.
func redactOnce(text string) string {
	text = emailRE.ReplaceAllString(text, RedactedEmail)
	text = cardRE.ReplaceAllStringFunc(text, func(s string) string {
		if luhn(s) {
			return RedactedCard
		}
		return s
	})
	return phoneRE.ReplaceAllStringFunc(text, func(s string) string {
		if digits(s) < 7 {
			return s
		}
		return RedactedPhone
	})
}

// digits counts the digits of s.
func digits(s string) int {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	sum, double := 0, false
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// RedactPII returns a Middleware that sends the model a copy of the
// conversation whose user and tool messages have their text passed
// through RedactText: e-mail addresses, card numbers and phone numbers
// never reach the provider. The conversation in the run's state keeps
// them; so do system prompts and the model's own messages. It is the
// example of a guardrail that rewrites rather than stops.
func RedactPII() Middleware {
	return Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		var msgs []model.Message // a copy, made at the first change
		for i, m := range req.Messages {
			if m.Role != model.RoleUser && m.Role != model.RoleTool {
				continue
			}
			var parts []model.Part
			for j, p := range m.Content {
				if p.Type != model.PartText {
					continue
				}
				red := RedactText(p.Text)
				if red == p.Text {
					continue
				}
				if parts == nil {
					parts = slices.Clone(m.Content)
				}
				parts[j].Text = red
			}
			if parts == nil {
				continue
			}
			if msgs == nil {
				msgs = slices.Clone(req.Messages)
			}
			msgs[i].Content = parts
		}
		if msgs == nil {
			return req, nil, nil
		}
		r := *req
		r.Messages = msgs
		return &r, nil, nil
	})
}

// PIIGuardrail returns a Guardrail that trips when the text holds what
// RedactText would redact, naming what it found; as an output guardrail
// (Streaming, if it should trip mid-reply) it keeps a model from writing
// personal data into the conversation.
func PIIGuardrail() Guardrail {
	return GuardrailFunc("pii", func(_ context.Context, text string) (string, error) {
		red := RedactText(text)
		if red == text {
			return "", nil
		}
		var found []string
		for _, k := range []string{RedactedEmail, RedactedCard, RedactedPhone} {
			if strings.Contains(red, k) && !strings.Contains(text, k) {
				found = append(found, strings.Trim(k, "[]"))
			}
		}
		return "the text holds personal data: " + strings.Join(found, ", "), nil
	})
}
