package nodes

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/tool"
)

// DefaultMaxHops is the default cap on model→tool round trips per run.
const DefaultMaxHops = 10

// ErrHopLimit is matched by *HopLimitError.
var ErrHopLimit = errors.New("tool round-trip limit reached")

// HopLimitError reports a model that still asked for tools after the run's
// cap on model→tool round trips.
type HopLimitError struct {
	// Limit is the cap in force.
	Limit int
	// LastReply is the model's last reply, whose tool calls were not run.
	LastReply model.Message
}

// Error returns the error's message.
func (e *HopLimitError) Error() string {
	names := make([]string, len(e.LastReply.ToolCalls))
	for i, c := range e.LastReply.ToolCalls {
		names[i] = c.Name
	}
	return fmt.Sprintf("nodes: the model asked for tools (%s) after %d round trips, the limit", strings.Join(names, ", "), e.Limit)
}

// Is reports whether target is ErrHopLimit.
func (e *HopLimitError) Is(target error) bool { return target == ErrHopLimit }

type llmConfig struct {
	toolSource
	system          string
	systemFunc      func(ctx context.Context) string
	name            string
	modelName       string
	settings        model.Settings
	choice          model.ToolChoice
	choiceEveryCall bool // WithToolChoiceOnEveryCall
	format          *model.ResponseFormat
	forceTool       bool // use a set-model-response tool even if the model supports structured output
	maxHops         int
	repair          bool // WithArgumentRepair
	stream          *bool
	setResponse     *tool.SetModelResponseTool
	structureErr    error
	modelMW         []modelmw.Middleware // WithModelMiddleware
}

// Structured decodes the JSON answer of an LLM node with structured output.
func Structured[T any](msg model.Message) (T, error) {
	var out T
	text := msg.Text()
	if text == "" {
		for _, p := range msg.Content {
			if p.Type == model.PartJSON {
				text = string(p.JSON)
				break
			}
		}
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return out, fmt.Errorf("nodes: decoding the structured answer %q: %w", text, err)
	}
	return out, nil
}

// Event kinds emitted by the LLM node.
const (
	// KindModelStart: a model call begins (graph.ModeEvents). Payload is a ModelCall.
	KindModelStart graph.EventKind = "model_start"
	// KindModelEnd: a model call ended (graph.ModeEvents). Payload is a
	// ModelCall with the usage; Err is set on failure.
	KindModelEnd graph.EventKind = "model_end"
	// KindModelDelta: a chunk of a streamed reply (graph.ModeMessages).
	// Payload is the model.Chunk.
	KindModelDelta graph.EventKind = "model_delta"
)

// ModelCall describes a model call in events.
type ModelCall struct {
	// Provider and Model name the model, when it describes itself.
	Provider, Model string
	// Agent is the node's agent name.
	Agent string
	// Tools is the number of tools offered.
	Tools int
	// Usage is the call's token usage (KindModelEnd).
	Usage model.Usage
	// RunUsage is the usage of the run's model calls so far, this one
	// included, when the run's context carries a modelmw.Ledger
	// (KindModelEnd); zero otherwise.
	RunUsage model.Usage
	// FinishReason is the provider's reason for stopping (KindModelEnd).
	FinishReason string
	// MessageID is the ID the reply gets in the conversation, known before
	// the call so that a user interface can show the streamed tokens
	// (KindModelDelta) as the message the state will hold.
	MessageID string
}

// LLM returns a node that calls m with the conversation and appends its
// reply. The system prompt (plus the instructions of the resolved tools) is
// sent first; the tools of the configured toolsets are resolved from the
// run's context on every call, with the state reachable by tool.RunState
// and the node's conversation by tool.Conversation. Nil options are ignored.
func LLM[S any, PS ChatState[S]](m model.Model, opts ...LLMOption) graph.NodeFunc[S] {
	cfg := llmConfig{maxHops: DefaultMaxHops}
	for _, o := range opts {
		if o != nil {
			o.applyLLM(&cfg)
		}
	}
	var info model.Info
	if m != nil {
		// Every call goes through a chain, even without middleware, so
		// that the usage of the run's calls reaches its Ledger.
		m = modelmw.Chain(m, cfg.modelMW...)
		info = modelmw.Describe(m)
	}
	useTool := cfg.format != nil && cfg.setResponse != nil && (cfg.forceTool || !info.StructuredOutput)
	var respDef model.ToolDefinition
	var respInstruction string
	if useTool {
		respDef = cfg.setResponse.Definition()
		respInstruction = strings.TrimSpace(cfg.setResponse.Instruction())
	}
	kind := runctx.NewKind[S, PS, struct{}]()
	var node func(ctx context.Context, s S) (S, error)
	node = func(ctx context.Context, in S) (S, error) {
		base := ctx // the node's context, before the run's values below
		if cfg.structureErr != nil {
			return in, fmt.Errorf("nodes: structured output: %w", cfg.structureErr)
		}
		if m == nil {
			return in, errors.New("nodes: LLM node has no model")
		}
		// Prompt functions, toolsets and the model read the node's own run:
		// its state and its conversation (not that of a caller whose tool
		// started this run). s is the node's working copy.
		ctx, s, _ := withRun(kind, cfg.withMemory(ctx), in)
		msgs := PS(s).ChatMessages()
		req := &model.Request{Model: cfg.modelName, Settings: cfg.settings}
		var instructions string
		if len(cfg.toolsets) > 0 || tool.RunResolveOptions(ctx) != nil {
			// A run's own tools and instructions (tool.AddTools,
			// tool.AddInstructions) reach a node without toolsets too.
			list, err := cfg.resolveTools(ctx)
			if err != nil {
				return *s, err
			}
			if useTool {
				if _, taken := list.Lookup(respDef.Name); taken {
					return *s, &tool.DuplicateToolError{Name: respDef.Name, First: list.Source(respDef.Name), Second: structuredSource}
				}
			}
			req.Tools = list.Definitions()
			instructions = list.Instructions()
		}
		if useTool {
			// The node's own tool, whatever the run's filters say.
			req.Tools = append(req.Tools, respDef)
			instructions = joinInstructions(instructions, respInstruction)
		} else if cfg.format != nil {
			req.ResponseFormat = cfg.format
		}
		choice := cfg.choice
		if (choice.Mode == model.ToolChoiceRequired || choice.Mode == model.ToolChoiceTool) && !cfg.choiceEveryCall && roundTrips(*msgs) > 0 {
			// A forced choice is for the turn's first call: forced on every
			// call, the model could never answer, and the loop would run to
			// its hop cap.
			choice = model.ToolChoice{}
		}
		req.ToolChoice = choiceFor(choice, req.Tools)
		system := cfg.system
		if cfg.systemFunc != nil {
			system = cfg.systemFunc(ctx)
		}
		if instructions != "" {
			system = strings.TrimSpace(system + "\n\n" + instructions)
		}
		req.Messages = make([]model.Message, 0, len(*msgs)+1)
		if system != "" {
			req.Messages = append(req.Messages, model.System(system))
		}
		req.Messages = append(req.Messages, *msgs...)

		call := ModelCall{Provider: info.Provider, Model: info.Name, Agent: cfg.name, Tools: len(req.Tools), MessageID: NewMessageID()}
		if cfg.modelName != "" {
			call.Model = cfg.modelName
		}
		graph.Emit(ctx, graph.ModeEvents, graph.Event{Kind: KindModelStart, Payload: call})
		start := time.Now()
		sctx, span := startModelSpan(ctx, call, req)
		if cfg.name != "" {
			sctx = modelmw.WithAgent(sctx, cfg.name)
		}
		// Messages the middleware adds to the conversation for good (a
		// summary) are stored before the reply.
		var (
			addedMu sync.Mutex
			added   []model.Message
		)
		sctx = modelmw.WithHistory(sctx, func(msg model.Message) {
			addedMu.Lock()
			defer addedMu.Unlock()
			added = append(added, msg)
		})
		resp, err := generate(sctx, m, req, cfg.stream)
		span.End(ctx, resp, err)
		if err != nil {
			graph.Emit(ctx, graph.ModeEvents, graph.Event{Kind: KindModelEnd, Payload: call, Err: err, Duration: time.Since(start)})
			return *s, err
		}
		call.Usage, call.FinishReason = resp.Usage, resp.FinishReason
		if l := modelmw.LedgerFrom(ctx); l != nil {
			call.RunUsage = l.Total()
		}
		if resp.Model != "" {
			call.Model = resp.Model
		}
		graph.Emit(ctx, graph.ModeEvents, graph.Event{Kind: KindModelEnd, Payload: call, Duration: time.Since(start)})

		reply := resp.Message
		reply.Role = model.RoleAssistant
		reply.ID = call.MessageID
		reply.ToolCalls = uniqueCallIDs(*msgs, reply.ToolCalls)
		if cfg.repair {
			repairArguments(&reply)
		}
		if cfg.name != "" {
			reply.Name = cfg.name
		}
		if useTool {
			if final, ok, err := structuredAnswer(ctx, cfg.setResponse, reply); err != nil {
				return *s, err
			} else if ok {
				reply = final
			}
		}
		if reply.HasToolCalls() {
			if hops := roundTrips(*msgs); hops >= cfg.maxHops {
				return *s, &HopLimitError{Limit: cfg.maxHops, LastReply: reply}
			}
		}
		addedMu.Lock()
		for _, msg := range added {
			msg.ID = NewMessageID()
			*msgs = append(*msgs, msg)
		}
		addedMu.Unlock()
		AppendReply(msgs, reply)
		if resp.FinishReason == model.FinishPaused && !reply.HasToolCalls() {
			// The provider paused a long turn (its own tools at work): the
			// paused reply goes back with the conversation, and the model
			// goes on.
			if n, _ := ctx.Value(pausesKey{}).(int); n < MaxPauses {
				return node(context.WithValue(base, pausesKey{}, n+1), *s)
			}
		}
		return *s, nil
	}
	return node
}

// MaxPauses is how many times in a row the LLM node lets a model go on
// with a turn its provider paused (model.FinishPaused) before it takes the
// paused reply as the answer.
const MaxPauses = 8

// pausesKey is the context key of the number of paused replies the LLM
// node has continued in a row.
type pausesKey struct{}

// generate calls the model, streaming when asked to or when someone listens
// to model tokens.
func generate(ctx context.Context, m model.Model, req *model.Request, stream *bool) (*model.Response, error) {
	streaming := graph.Emitting(ctx, graph.ModeMessages)
	if stream != nil {
		streaming = *stream
	}
	if !streaming {
		resp, err := m.Generate(ctx, req)
		if err == nil && resp == nil {
			return nil, errNoResponse
		}
		return resp, err
	}
	var acc model.Accumulator
	chunks := 0
	for chunk, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		chunks++
		acc.Add(chunk)
		graph.Emit(ctx, graph.ModeMessages, graph.Event{Kind: KindModelDelta, Payload: chunk})
	}
	if chunks == 0 {
		return nil, errNoResponse
	}
	return acc.Response(), nil
}

// errNoResponse reports a model that answered with nothing: no response
// and no error, or a stream that ended before its first chunk.
var errNoResponse = errors.New("nodes: the model returned neither a response nor an error")

// choiceFor returns the tool choice of a request that offers tools: c,
// unless tools cannot satisfy it (no tools, or not the tool c names), in
// which case the model chooses freely.
func choiceFor(c model.ToolChoice, tools []model.ToolDefinition) model.ToolChoice {
	if c.Mode == model.ToolChoiceAuto {
		return c
	}
	if len(tools) == 0 {
		return model.ToolChoice{}
	}
	if c.Mode == model.ToolChoiceTool {
		for i := range tools {
			if tools[i].Name == c.Name {
				return c
			}
		}
		return model.ToolChoice{}
	}
	return c
}

// joinInstructions appends the instruction text to instructions, separated
// by a blank line as tool.CollectInstructions separates them.
func joinInstructions(instructions, text string) string {
	switch {
	case text == "":
		return instructions
	case instructions == "":
		return text
	}
	return instructions + "\n\n" + text
}

// structuredAnswer turns a call of the set-model-response tool into the
// final answer: an assistant message whose text is the validated JSON (the
// first valid one when the reply calls the tool more than once). A reply
// without tool calls whose text is JSON the tool accepts (models sometimes
// answer with the JSON instead of calling the tool) becomes the final
// answer the same way; other text is left as it is.
func structuredAnswer(ctx context.Context, t *tool.SetModelResponseTool, reply model.Message) (model.Message, bool, error) {
	name := t.Definition().Name
	for _, c := range reply.ToolCalls {
		if c.Name != name {
			continue
		}
		if res := tool.Invoke(ctx, t, c); !res.IsError {
			return answerMessage(reply, res), true, nil
		}
		// An invalid answer: unless a later call gives a valid one, the
		// call is kept, and the ToolsNode answers it with the validation
		// error for the model to see what was wrong.
	}
	if len(reply.ToolCalls) == 0 {
		if text, ok := jsonText(reply.Text()); ok {
			if res := tool.Invoke(ctx, t, model.ToolCall{ID: "text", Name: name, Arguments: json.RawMessage(text)}); !res.IsError {
				return answerMessage(reply, res), true, nil
			}
		}
	}
	return reply, false, nil
}

// answerMessage is the final answer of reply: the JSON of the
// set-model-response tool's result res, as text.
func answerMessage(reply model.Message, res tool.Result) model.Message {
	var raw json.RawMessage
	for _, p := range res.Content {
		if p.Type == model.PartJSON {
			raw = p.JSON
		}
	}
	if raw == nil {
		raw = json.RawMessage(res.Text())
	}
	return model.Message{ID: reply.ID, Role: model.RoleAssistant, Name: reply.Name, Content: []model.Part{model.TextPart(string(raw))}}
}

// jsonText returns the JSON object a reply's text consists of, alone or in
// a Markdown code fence, and whether it found one.
func jsonText(text string) (string, bool) {
	text = strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(text, "```"); ok {
		body, ok := strings.CutSuffix(rest, "```")
		if !ok {
			return "", false
		}
		body = strings.TrimPrefix(body, "json")
		text = strings.TrimSpace(body)
	}
	if !strings.HasPrefix(text, "{") || !json.Valid([]byte(text)) {
		return "", false
	}
	return text, true
}

// repairArguments repairs the arguments of reply's calls that are not
// valid JSON and that tool.RepairJSON can fix, in a copy of the calls, and
// lists the repaired calls' IDs in the reply's metadata.
func repairArguments(reply *model.Message) {
	var (
		out      []model.ToolCall // a copy, made at the first change
		repaired []string
	)
	for i, c := range reply.ToolCalls {
		if json.Valid(c.Arguments) {
			continue
		}
		fixed, err := tool.RepairJSON(c.Arguments)
		if err != nil || !json.Valid(fixed) {
			continue
		}
		if out == nil {
			out = slices.Clone(reply.ToolCalls)
		}
		out[i].Arguments = fixed
		repaired = append(repaired, c.ID)
	}
	if out == nil {
		return
	}
	reply.ToolCalls = out
	reply.Metadata = maps.Clone(reply.Metadata)
	if reply.Metadata == nil {
		reply.Metadata = map[string]string{}
	}
	reply.Metadata[MetaRepairedCalls] = strings.Join(repaired, ",")
}

// uniqueCallIDs makes the IDs of a reply's tool calls usable: a call
// without an ID, or whose ID an earlier call of the reply or of the
// conversation has, gets a fresh one. Some OpenAI-compatible servers send
// calls without IDs, or number them afresh every turn; answers are matched
// to calls, and tool messages identified, by call ID. Calls with usable IDs
// are returned as they are, and finding that allocates nothing.
func uniqueCallIDs(history []model.Message, calls []model.ToolCall) []model.ToolCall {
	var out []model.ToolCall // a copy, made at the first change
	for i, c := range calls {
		if c.ID != "" && !callIDUsed(c.ID, history, calls[:i]) {
			continue
		}
		if out == nil {
			out = slices.Clone(calls)
		}
		id := freshCallID()
		for callIDUsed(id, history, out) {
			id = freshCallID()
		}
		out[i].ID = id
	}
	if out == nil {
		return calls
	}
	return out
}

// callIDUsed reports whether a call of history, or one of earlier, has id.
func callIDUsed(id string, history []model.Message, earlier []model.ToolCall) bool {
	for _, c := range earlier {
		if c.ID == id {
			return true
		}
	}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}

// freshCallID returns a new tool call ID: "call_" and 24 hex digits.
func freshCallID() string {
	u := uuid.New()
	return "call_" + hex.EncodeToString(u[4:16])
}

// roundTrips counts the assistant messages with tool calls since the last
// user message: the model→tool round trips of the current run.
func roundTrips(msgs []model.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i].Role {
		case model.RoleUser:
			return n
		case model.RoleAssistant:
			if msgs[i].HasToolCalls() {
				n++
			}
		}
	}
	return n
}
