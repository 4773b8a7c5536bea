package gemini

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
)

// toResponse maps a whole reply.
func toResponse(r *genai.GenerateContentResponse) (*model.Response, error) {
	var st streamState
	if r == nil {
		return nil, errors.New("gemini: empty reply")
	}
	var acc model.Accumulator
	for _, c := range st.add(r) {
		acc.Add(c)
	}
	if st.finish == "" {
		return nil, errors.New("gemini: the reply has no candidates and no finish reason")
	}
	acc.Add(st.final())
	return acc.Response(), nil
}

// streamState turns the SDK's replies, whole or streamed, into chunks. The
// finish reason and usage are held back for the final chunk.
type streamState struct {
	model     string
	finish    string
	usage     *model.Usage
	calls     int  // function calls so far
	reasoning int  // index of the reasoning part being written
	thinking  bool // the last part was a thought
	text      bool // text has been written since the last thought
}

func (s *streamState) add(r *genai.GenerateContentResponse) []model.Chunk {
	if r == nil {
		return nil
	}
	if r.ModelVersion != "" {
		s.model = r.ModelVersion
	}
	if u := r.UsageMetadata; u != nil {
		mu := usage(u)
		s.usage = &mu
	}
	if len(r.Candidates) == 0 {
		if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" {
			s.finish = "content_filter"
		}
		return nil
	}
	cand := r.Candidates[0]
	if cand == nil {
		return nil
	}
	var out []model.Chunk
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p == nil {
				continue
			}
			out = append(out, s.part(p)...)
		}
	}
	if cand.FinishReason != "" {
		s.finish = finishReason(cand.FinishReason)
	}
	return out
}

func (s *streamState) part(p *genai.Part) []model.Chunk {
	sig := base64.StdEncoding.EncodeToString(p.ThoughtSignature)
	switch {
	case p.Thought && p.FunctionCall == nil:
		if !s.thinking && (s.text || s.reasoning > 0 || s.calls > 0) {
			s.reasoning++ // a new stretch of thinking
		}
		s.thinking, s.text = true, false
		return []model.Chunk{{Reasoning: &model.ReasoningDelta{Index: s.reasoning, Text: p.Text, Data: string(p.ThoughtSignature)}}}
	case p.FunctionCall != nil:
		s.thinking = false
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = generatedIDPrefix + strconv.Itoa(s.calls)
		}
		args := []byte("{}")
		if len(fc.Args) > 0 {
			if b, err := json.Marshal(fc.Args); err == nil {
				args = b
			}
		}
		c := model.Chunk{ToolCall: &model.ToolCallDelta{Index: s.calls, ID: id, Name: fc.Name, Arguments: string(args)}}
		s.calls++
		if len(p.ThoughtSignature) > 0 {
			c.Metadata = map[string]string{MetaCallSignature + id: sig}
		}
		return []model.Chunk{c}
	case p.InlineData != nil && len(p.InlineData.Data) > 0:
		s.thinking = false
		mt := p.InlineData.MIMEType
		if mt == "" {
			// A blob the server left untyped is typed by its bytes, so the
			// reply can be sent back (the API refuses inline data without one).
			mt = http.DetectContentType(p.InlineData.Data)
		}
		img := model.ImagePart(mt, p.InlineData.Data)
		return []model.Chunk{{Part: &img}}
	case p.Text != "" || (len(p.ThoughtSignature) > 0 && isEmptyPart(p)):
		s.thinking, s.text = false, s.text || p.Text != ""
		c := model.Chunk{Text: p.Text}
		if len(p.ThoughtSignature) > 0 {
			c.Metadata = map[string]string{MetaTextSignature: sig}
		}
		return []model.Chunk{c}
	case isEmptyPart(p):
		return nil
	}
	// A part this package has no part of its own for: code the model ran,
	// its result, a file by URI. Kept whole to go back as it came.
	s.thinking = false
	raw, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	pp := model.ProviderPart(PartMIMEType, raw)
	return []model.Chunk{{Part: &pp}}
}

// isEmptyPart reports whether p carries nothing but maybe a signature.
func isEmptyPart(p *genai.Part) bool {
	return p.Text == "" && p.InlineData == nil && p.FileData == nil && p.FunctionCall == nil &&
		p.FunctionResponse == nil && p.ExecutableCode == nil && p.CodeExecutionResult == nil &&
		p.ToolCall == nil && p.ToolResponse == nil
}

func (s *streamState) final() model.Chunk {
	finish := s.finish
	if finish == "stop" && s.calls > 0 {
		finish = "tool_calls"
	}
	return model.Chunk{Usage: s.usage, FinishReason: finish, Model: s.model}
}

// usage maps the token counts: the prompt with what tools added to it,
// and the candidates with the thinking that led to them.
func usage(u *genai.GenerateContentResponseUsageMetadata) model.Usage {
	in := int(u.PromptTokenCount) + int(u.ToolUsePromptTokenCount)
	out := int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount)
	total := int(u.TotalTokenCount)
	if total == 0 {
		total = in + out
	}
	return model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: total}
}

// finishReason normalizes Gemini's finish reasons: STOP is "stop" (made
// "tool_calls" when the reply calls functions), MAX_TOKENS "length", and
// the reasons that say a filter stopped the reply "content_filter". Others
// pass through in lower case.
func finishReason(r genai.FinishReason) string {
	switch r {
	case genai.FinishReasonStop:
		return "stop"
	case genai.FinishReasonMaxTokens:
		return "length"
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return "content_filter"
	}
	return strings.ToLower(string(r))
}

// convertError turns an error of the SDK into a *model.ProviderError
// carrying the status, Google's status name as its Type and the message,
// with the wait a RetryInfo detail asks for. A request longer than the
// model's window (a 400 whose message says the input token count exceeds
// the maximum) gets the code "context_length_exceeded", which names that
// case across providers. Errors that did not come from the API are
// returned wrapped, so model.IsTransient can classify them.
func convertError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*streamlimit.Error](err); ok {
		return fmt.Errorf("gemini: %w (gemini.WithStreamLimits sets the limits)", err)
	}
	if ae, ok := errors.AsType[genai.APIError](err); ok {
		pe := &model.ProviderError{
			Provider:   "gemini",
			StatusCode: ae.Code,
			Type:       ae.Status,
			Message:    ae.Message,
			RetryAfter: retryDelay(ae.Details),
			Err:        err,
		}
		if pe.StatusCode == 0 {
			pe.StatusCode = statusOf(ae.Status)
		}
		if contextTooLong(ae.Message) {
			pe.Code = "context_length_exceeded"
		}
		return pe
	}
	return fmt.Errorf("gemini: %w", err)
}

// statusOf is the HTTP status of a Google status name, for an error whose
// code is missing.
func statusOf(status string) int {
	switch status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return 400
	case "UNAUTHENTICATED":
		return 401
	case "PERMISSION_DENIED":
		return 403
	case "NOT_FOUND":
		return 404
	case "RESOURCE_EXHAUSTED":
		return 429
	case "INTERNAL", "UNKNOWN", "DATA_LOSS":
		return 500
	case "UNAVAILABLE":
		return 503
	case "DEADLINE_EXCEEDED":
		return 504
	}
	return 0
}

// contextTooLong reports whether Gemini's message says the input does not
// fit the model's window ("The input token count (1200000) exceeds the
// maximum number of tokens allowed (1048576).").
func contextTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "token count") && strings.Contains(msg, "exceeds the maximum")
}

// retryDelay reads the wait of a google.rpc.RetryInfo detail ("retryDelay":
// "20s"), or zero.
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if v, err := time.ParseDuration(s); err == nil && v > 0 {
			return v
		}
	}
	return 0
}
