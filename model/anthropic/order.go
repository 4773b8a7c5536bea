package anthropic

import (
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/trellis-go/trellis/model"
)

// MetaBlocks is the Message.Metadata key under which a reply records the
// order of its content blocks when they do not come in the usual order
// (thinking, server tool blocks, text, tool calls): Claude thinking
// between tool calls, or text before and after a web search, say. The
// record is "r" for a thinking block, "p" for a block kept as a provider
// part (the next of the message's parts of ContentBlockMIMEType), "t<n>"
// for a text block of n bytes of the message's text, "u:<id>" for the
// tool_use block of the call with that ID, separated by spaces. The
// provider sends such a message back with its blocks in that order, as the
// API expects; a message whose parts no longer match the record (the
// application edited it) is sent in the usual order.
const MetaBlocks = "trellis.anthropic.blocks"

// blockOrder records the kinds of a reply's content blocks as they come.
type blockOrder struct {
	blocks []block
	// interleaved: a thinking block came after another kind, a server
	// tool's block after text or a tool call, or text after a tool call —
	// an order the usual one does not keep.
	interleaved bool
	sawOther    bool // text, tool_use or a provider block seen
	sawText     bool
	sawTool     bool
}

// block is one content block of a reply: kind 'r' (thinking), 'p' (a
// provider part), 't' (text of n bytes) or 'u' (the tool_use of call id).
type block struct {
	kind byte
	n    int
	id   string
}

func (o *blockOrder) thinking() {
	o.interleaved = o.interleaved || o.sawOther
	o.blocks = append(o.blocks, block{kind: 'r'})
}

// text records a text block of n bytes so far and returns its position.
func (o *blockOrder) text(n int) int {
	o.interleaved = o.interleaved || o.sawTool
	o.sawOther, o.sawText = true, true
	o.blocks = append(o.blocks, block{kind: 't', n: n})
	return len(o.blocks) - 1
}

// grow adds n bytes to the text block at position k.
func (o *blockOrder) grow(k, n int) {
	if k >= 0 && k < len(o.blocks) && o.blocks[k].kind == 't' {
		o.blocks[k].n += n
	}
}

// provider records a block kept as a provider part.
func (o *blockOrder) provider() {
	o.interleaved = o.interleaved || o.sawText || o.sawTool
	o.sawOther = true
	o.blocks = append(o.blocks, block{kind: 'p'})
}

func (o *blockOrder) toolUse(id string) {
	o.sawOther, o.sawTool = true, true
	o.blocks = append(o.blocks, block{kind: 'u', id: id})
}

// metadata returns the record to keep with the message, nil when its
// blocks come in the usual order.
func (o *blockOrder) metadata() map[string]string {
	if !o.interleaved {
		return nil
	}
	kinds := make([]string, len(o.blocks))
	for i, b := range o.blocks {
		switch b.kind {
		case 'r':
			kinds[i] = "r"
		case 'p':
			kinds[i] = "p"
		case 't':
			kinds[i] = "t" + strconv.Itoa(b.n)
		default:
			kinds[i] = "u:" + b.id
		}
	}
	return map[string]string{MetaBlocks: strings.Join(kinds, " ")}
}

// orderedBlocks returns the blocks of an assistant message in the order
// its MetaBlocks record gives, or false when it has no record or the record
// does not match its parts and calls.
func orderedBlocks(msg *model.Message, thinking []sdk.ContentBlockParamUnion) ([]sdk.ContentBlockParamUnion, bool) {
	rec, ok := msg.Metadata[MetaBlocks]
	if !ok {
		return nil, false
	}
	var (
		text     strings.Builder
		provided []sdk.ContentBlockParamUnion
	)
	for _, p := range msg.Content {
		switch {
		case p.IsReasoning():
		case p.Type == model.PartText:
			text.WriteString(p.Text)
		case ours(p):
			b, err := rawBlock(p)
			if err != nil {
				return nil, false
			}
			provided = append(provided, b)
		case p.Type == model.PartProvider:
			// Another provider's: left out.
		default:
			return nil, false // images or JSON: not a reply as it came
		}
	}
	rest := text.String()
	var out []sdk.ContentBlockParamUnion
	r, u, pv := 0, 0, 0
	for _, k := range strings.Fields(rec) {
		switch {
		case k == "r":
			if r >= len(thinking) {
				return nil, false
			}
			out = append(out, thinking[r])
			r++
		case k == "p":
			if pv >= len(provided) {
				return nil, false
			}
			out = append(out, provided[pv])
			pv++
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
	if r != len(thinking) || u != len(msg.ToolCalls) || pv != len(provided) || rest != "" {
		return nil, false
	}
	return out, true
}
