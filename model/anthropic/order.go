package anthropic

import (
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/trellis-go/trellis/model"
)

// MetaBlocks is the Message.Metadata key under which a reply records the
// order of its content blocks when its thinking is interleaved with its
// text and tool calls (Claude thinking between tool calls): "r" for a
// thinking block, "t<n>" for a text block of n bytes of the message's
// text, "u:<id>" for the tool_use block of the call with that ID,
// separated by spaces. The provider sends
// such a message back with its blocks in that order, as the API expects;
// a message whose parts no longer match the record (the application
// edited it) is sent in the usual order: thinking, text, tool calls.
const MetaBlocks = "trellis.anthropic.blocks"

// blockOrder records the kinds of a reply's content blocks as they come.
type blockOrder struct {
	kinds []string
	// interleaved: a thinking block came after text or a tool call, or
	// text after a tool call — an order the usual one does not keep.
	interleaved bool
	sawOther    bool // text or tool_use seen
	sawTool     bool
}

func (o *blockOrder) thinking() {
	o.interleaved = o.interleaved || o.sawOther
	o.kinds = append(o.kinds, "r")
}

// text records a text block of n bytes so far and returns its position.
func (o *blockOrder) text(n int) int {
	o.interleaved = o.interleaved || o.sawTool
	o.sawOther = true
	o.kinds = append(o.kinds, "t"+strconv.Itoa(n))
	return len(o.kinds) - 1
}

// grow adds n bytes to the text block at position k.
func (o *blockOrder) grow(k, n int) {
	if k >= 0 && k < len(o.kinds) && strings.HasPrefix(o.kinds[k], "t") {
		m, _ := strconv.Atoi(o.kinds[k][1:])
		o.kinds[k] = "t" + strconv.Itoa(m+n)
	}
}

func (o *blockOrder) toolUse(id string) {
	o.sawOther, o.sawTool = true, true
	o.kinds = append(o.kinds, "u:"+id)
}

// metadata returns the record to keep with the message, nil when its
// blocks come in the usual order.
func (o *blockOrder) metadata() map[string]string {
	if !o.interleaved {
		return nil
	}
	return map[string]string{MetaBlocks: strings.Join(o.kinds, " ")}
}

// orderedBlocks returns the blocks of an assistant message in the order
// its MetaBlocks record gives, or false when it has no record or the record
// does not match its parts and calls.
func orderedBlocks(msg *model.Message, thinking []sdk.ContentBlockParamUnion) ([]sdk.ContentBlockParamUnion, bool) {
	rec, ok := msg.Metadata[MetaBlocks]
	if !ok {
		return nil, false
	}
	var text strings.Builder
	for _, p := range msg.Content {
		switch {
		case p.IsReasoning():
		case p.Type == model.PartText:
			text.WriteString(p.Text)
		default:
			return nil, false // images or JSON: not a reply as it came
		}
	}
	rest := text.String()
	var out []sdk.ContentBlockParamUnion
	r, u := 0, 0
	for _, k := range strings.Fields(rec) {
		switch {
		case k == "r":
			if r >= len(thinking) {
				return nil, false
			}
			out = append(out, thinking[r])
			r++
		case strings.HasPrefix(k, "u:"):
			if u >= len(msg.ToolCalls) {
				return nil, false
			}
			tc := msg.ToolCalls[u]
			if tc.ID == "" || tc.Name == "" || tc.ID != k[len("u:"):] {
				return nil, false
			}
			out = append(out, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)}})
			u++
		case strings.HasPrefix(k, "t"):
			n, err := strconv.Atoi(k[1:])
			if err != nil || n < 0 || n > len(rest) {
				return nil, false
			}
			seg := rest[:n]
			if !utf8.ValidString(seg) {
				return nil, false // not where the reply's blocks ended
			}
			if !blank(seg) {
				out = append(out, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: seg}})
			}
			rest = rest[n:]
		default:
			return nil, false
		}
	}
	if r != len(thinking) || u != len(msg.ToolCalls) || rest != "" {
		return nil, false
	}
	return out, true
}
