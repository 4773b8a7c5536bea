package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Multi round-trip requests (SEP-2322, protocol 2026-07-28): a server may
// no longer send requests to the client while it serves a call. It answers
// the call with the input it needs (inputRequests) instead, and the client
// calls again with the answers (inputResponses) and the state the server
// gave it (requestState). A served tool asks with tool.Elicit and
// tool.Sample as before; on such a session the first question ends the
// round: the call's result carries it, and the tool runs again from its
// start with the answers so far, each question of the same rank answered
// in turn (as graph.Interrupt replays a node).

// protocolMultiRoundTrip is the first protocol version that has
// multi round-trip requests.
const protocolMultiRoundTrip = "2026-07-28"

// maxRequestState bounds the request state a client sends back, and so
// the answers a call gathers.
const maxRequestState = 1 << 20

// errInputRequired is what tool.Elicit and tool.Sample return to a tool
// whose question is sent to the client at the end of this round.
var errInputRequired = errors.New("mcp: the client answers in the next round trip")

// multiRoundTrip reports whether the client of ss asks by multi round-trip
// requests.
func multiRoundTrip(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= protocolMultiRoundTrip
}

// roundTripPeer is the peer of a served tool on a multi round-trip session:
// it answers the questions the client answered in earlier rounds, and
// records the first one it did not.
type roundTripPeer struct {
	sessionPeer

	tool string          // the tool called
	args json.RawMessage // its arguments, as received

	mu      sync.Mutex
	answers map[string]json.RawMessage // by question ID, every round's
	asked   int                        // questions asked in this round
	pending sdk.InputRequestMap        // the question this round ends with
}

// next returns the ID of the next question and its answer, if the client
// gave one; without an answer, it records req as the question to send, and
// the tool gets errInputRequired.
func (p *roundTripPeer) next(req sdk.InputRequest) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := fmt.Sprintf("q%d", p.asked)
	p.asked++
	if a, ok := p.answers[id]; ok {
		return a, nil
	}
	if p.pending == nil {
		p.pending = sdk.InputRequestMap{}
	}
	p.pending[id] = req
	return nil, errInputRequired
}

// Elicit answers from an earlier round, or asks in the next one.
func (p *roundTripPeer) Elicit(ctx context.Context, req tool.ElicitRequest) (tool.ElicitResult, error) {
	params, err := elicitParams(p.ss, req)
	if err != nil {
		return tool.ElicitResult{}, err
	}
	raw, err := p.next(params)
	if err != nil {
		return tool.ElicitResult{}, err
	}
	var res sdk.ElicitResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return tool.ElicitResult{}, fmt.Errorf("mcp: elicitation: the client's answer: %w", err)
	}
	return tool.ElicitResult{Action: res.Action, Content: res.Content}, nil
}

// Sample answers from an earlier round, or asks in the next one.
func (p *roundTripPeer) Sample(ctx context.Context, req tool.SamplingRequest) (tool.SamplingResult, error) {
	params, err := samplingParams(p.ss, req)
	if err != nil {
		return tool.SamplingResult{}, err
	}
	raw, err := p.next(params)
	if err != nil {
		return tool.SamplingResult{}, err
	}
	var res sdk.CreateMessageWithToolsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return tool.SamplingResult{}, fmt.Errorf("mcp: sampling: the client's answer: %w", err)
	}
	return tool.SamplingResult{
		Message:    model.Message{Role: model.RoleAssistant, Content: Parts(res.Content)},
		Model:      res.Model,
		StopReason: res.StopReason,
	}, nil
}

// roundTrip prepares a call on a multi round-trip session: the answers of
// the earlier rounds (from the request state, which must carry this
// server's signature for this tool and these arguments) and of the last
// one (inputResponses).
func (s *Server) roundTrip(req *sdk.CallToolRequest, name string, args json.RawMessage) (*roundTripPeer, error) {
	p := &roundTripPeer{sessionPeer: sessionPeer{ss: req.Session, token: callToken(req.Params.Meta)}, tool: name, args: args, answers: map[string]json.RawMessage{}}
	if st := req.Params.RequestState; st != "" {
		answers, err := s.openState(st, name, args)
		if err != nil {
			return nil, err
		}
		p.answers = answers
	}
	for id, r := range req.Params.InputResponses {
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("mcp: input response %s: %w", quote(id), err)
		}
		p.answers[id] = raw
	}
	return p, nil
}

// finish turns the tool's result into the call's: the question it asked,
// with the answers so far as the request state, or its result.
func (s *Server) finish(p *roundTripPeer, res *sdk.CallToolResult) *sdk.CallToolResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		return res
	}
	return &sdk.CallToolResult{InputRequests: p.pending, RequestState: s.sealState(p.answers, p.tool, p.args)}
}

// sealState encodes answers, signed for the tool name and its arguments:
// the client holds them between rounds and must not change them, nor
// bring them to another call.
func (s *Server) sealState(answers map[string]json.RawMessage, name string, args json.RawMessage) string {
	body, _ := json.Marshal(answers) // raw JSON values: cannot fail
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + base64.RawURLEncoding.EncodeToString(s.stateMAC(enc, name, args))
}

// openState checks and decodes a request state made by sealState.
func (s *Server) openState(st, name string, args json.RawMessage) (map[string]json.RawMessage, error) {
	bad := fmt.Errorf("mcp: tool %s: the request state is not one this server gave for this call", quote(name))
	if len(st) > maxRequestState {
		return nil, bad
	}
	enc, sig, ok := strings.Cut(st, ".")
	if !ok {
		return nil, bad
	}
	mac, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil || !hmac.Equal(mac, s.stateMAC(enc, name, args)) {
		return nil, bad
	}
	body, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil {
		return nil, bad
	}
	var answers map[string]json.RawMessage
	if err := json.Unmarshal(body, &answers); err != nil {
		return nil, bad
	}
	if answers == nil {
		answers = map[string]json.RawMessage{}
	}
	return answers, nil
}

func (s *Server) stateMAC(enc, name string, args json.RawMessage) []byte {
	m := hmac.New(sha256.New, s.stateKey)
	sum := sha256.Sum256(args)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write(sum[:])
	m.Write([]byte{0})
	m.Write([]byte(enc))
	return m.Sum(nil)
}

// WithRoundTripKey sets the key that signs the state a client carries
// between the rounds of a multi round-trip call (protocol 2026-07-28), so
// that it cannot alter the answers it gave nor bring them to another call.
// Servers that share clients (replicas behind a load balancer) need the
// same key, of at least 32 random bytes; by default each Server makes one
// of its own.
func WithRoundTripKey(key []byte) ServerOption {
	return func(c *serverConfig) { c.stateKey = bytes.Clone(key) }
}

// newStateKey returns a random key to sign request states with.
func newStateKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails
	return k
}
