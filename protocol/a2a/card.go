package a2a

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
)

// CardPath is the path, under an agent's base URL, of its agent card.
const CardPath = "/.well-known/agent-card.json"

// BindingJSONRPC is the protocol binding of an interface that speaks
// JSON-RPC 2.0 over HTTP, the only binding this package speaks.
const BindingJSONRPC = "JSONRPC"

// Protocol versions this package speaks.
const (
	// Version is the protocol version this package speaks first.
	Version = "1.0"
	// LegacyVersion is the older protocol version this package also
	// speaks: as a client to agents whose card offers nothing newer, and
	// as a server to clients that ask for it.
	LegacyVersion = "0.3"
)

// VersionHeader is the HTTP header in which a client names the protocol
// version of its request.
const VersionHeader = "A2A-Version"

// Card is an agent card: what an agent publishes about itself at CardPath
// so that clients can decide whether and how to call it. It holds the
// fields of protocol 1.0 and, for cards written by 0.3 agents, the 0.3
// fields that 1.0 replaced (URL, ProtocolVersion, PreferredTransport,
// AdditionalInterfaces).
type Card struct {
	// Name is the agent's name, for people.
	Name string `json:"name"`
	// Description says what the agent does.
	Description string `json:"description"`
	// SupportedInterfaces are the endpoints where the agent can be reached,
	// the preferred first.
	SupportedInterfaces []Interface `json:"supportedInterfaces,omitempty"`
	// Provider is the organization behind the agent; optional.
	Provider *Provider `json:"provider,omitempty"`
	// Version is the agent's own version, such as "1.2.0".
	Version string `json:"version"`
	// DocumentationURL documents the agent; optional.
	DocumentationURL string `json:"documentationUrl,omitempty"`
	// Capabilities are the optional protocol features the agent supports.
	Capabilities Capabilities `json:"capabilities"`
	// SecuritySchemes describe how to authenticate, by scheme name, as
	// the protocol's SecurityScheme objects; optional.
	SecuritySchemes map[string]json.RawMessage `json:"securitySchemes,omitempty"`
	// SecurityRequirements say which schemes a client must use; optional.
	SecurityRequirements []json.RawMessage `json:"securityRequirements,omitempty"`
	// DefaultInputModes are the media types the agent accepts.
	DefaultInputModes []string `json:"defaultInputModes"`
	// DefaultOutputModes are the media types the agent produces.
	DefaultOutputModes []string `json:"defaultOutputModes"`
	// Skills are what the agent is good at.
	Skills []Skill `json:"skills"`
	// IconURL is an icon for the agent; optional.
	IconURL string `json:"iconUrl,omitempty"`

	// URL is a 0.3 card's endpoint (1.0: SupportedInterfaces).
	URL string `json:"url,omitempty"`
	// ProtocolVersion is a 0.3 card's protocol version, such as "0.3.0"
	// (1.0: Interface.ProtocolVersion).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// PreferredTransport is a 0.3 card's binding at URL, "JSONRPC" when
	// empty (1.0: Interface.ProtocolBinding).
	PreferredTransport string `json:"preferredTransport,omitempty"`
	// AdditionalInterfaces are a 0.3 card's other endpoints.
	AdditionalInterfaces []LegacyInterface `json:"additionalInterfaces,omitempty"`
}

// Interface is an endpoint of an agent: a URL, the protocol binding it
// speaks and the protocol version.
type Interface struct {
	// URL is the endpoint's address.
	URL string `json:"url"`
	// ProtocolBinding is the binding: "JSONRPC", "GRPC", "HTTP+JSON".
	ProtocolBinding string `json:"protocolBinding"`
	// Tenant is a tenant to name in requests; optional.
	Tenant string `json:"tenant,omitempty"`
	// ProtocolVersion is the protocol version, such as "1.0".
	ProtocolVersion string `json:"protocolVersion"`
}

// LegacyInterface is an endpoint of a 0.3 card.
type LegacyInterface struct {
	// URL is the endpoint's address.
	URL string `json:"url"`
	// Transport is its binding: "JSONRPC", "GRPC", "HTTP+JSON".
	Transport string `json:"transport"`
}

// Provider is the organization behind an agent.
type Provider struct {
	// Organization is its name.
	Organization string `json:"organization"`
	// URL is its web site.
	URL string `json:"url"`
}

// Capabilities are the optional protocol features an agent supports.
type Capabilities struct {
	// Streaming: the agent answers SendStreamingMessage.
	Streaming bool `json:"streaming,omitempty"`
	// PushNotifications: the agent posts task updates to webhooks.
	PushNotifications bool `json:"pushNotifications,omitempty"`
	// ExtendedAgentCard: authenticated clients may fetch a fuller card.
	ExtendedAgentCard bool `json:"extendedAgentCard,omitempty"`
	// Extensions are the protocol extensions the agent supports.
	Extensions []Extension `json:"extensions,omitempty"`
}

// Extension is a protocol extension an agent supports.
type Extension struct {
	// URI identifies the extension and its version.
	URI string `json:"uri"`
	// Description says how the agent uses it.
	Description string `json:"description,omitempty"`
	// Required says clients must support it to talk to the agent.
	Required bool `json:"required,omitempty"`
	// Params configure it; optional.
	Params map[string]any `json:"params,omitempty"`
}

// Skill is something an agent is good at.
type Skill struct {
	// ID identifies the skill.
	ID string `json:"id"`
	// Name names it, for people.
	Name string `json:"name"`
	// Description says what it does.
	Description string `json:"description"`
	// Tags are keywords for it.
	Tags []string `json:"tags"`
	// Examples are prompts it handles.
	Examples []string `json:"examples,omitempty"`
	// InputModes and OutputModes override the card's default media types.
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// endpoint is the JSON-RPC endpoint a client talks to and the generation
// of the protocol it speaks there.
type endpoint struct {
	url    string
	legacy bool // 0.3
}

// version is the A2A-Version header value the client sends.
func (e endpoint) version() string {
	if e.legacy {
		return LegacyVersion
	}
	return Version
}

// protocolGeneration classifies a protocol version: "1" for 1.x, "0.3" for
// 0.3.x, "" for anything else. Patch numbers are ignored, as the protocol
// asks.
func protocolGeneration(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	switch {
	case major == "1":
		return "1"
	case major == "0" && minor == "3":
		return "0.3"
	}
	return ""
}

// endpoint chooses the JSON-RPC endpoint of the card, resolving a relative
// URL against base (the card's own address): the first 1.x JSON-RPC
// interface, else the first 0.3 one, from supportedInterfaces, then from a
// 0.3 card's url, preferredTransport and additionalInterfaces.
//
// Those three are fields of 0.3 cards, which 1.0 replaced with
// supportedInterfaces: an endpoint named there is spoken to in 0.3 even
// when the card's protocolVersion says 1.x, as some 0.3 agents' cards do
// (their server then answers only the 0.3 methods).
func (c *Card) endpoint(base *url.URL) (endpoint, error) {
	type offer struct{ url, binding, version string }
	var offers []offer
	for _, in := range c.SupportedInterfaces {
		offers = append(offers, offer{in.URL, in.ProtocolBinding, in.ProtocolVersion})
	}
	legacyVersion := c.ProtocolVersion
	if protocolGeneration(legacyVersion) == "1" {
		legacyVersion = LegacyVersion
	}
	if c.URL != "" {
		offers = append(offers, offer{c.URL, c.PreferredTransport, legacyVersion})
	}
	for _, in := range c.AdditionalInterfaces {
		offers = append(offers, offer{in.URL, in.Transport, legacyVersion})
	}
	var jsonrpc, others []string
	var legacy *offer
	for i := range offers {
		o := &offers[i]
		binding := o.binding
		if binding == "" && o.url == c.URL {
			binding = BindingJSONRPC // a 0.3 card's default transport
		}
		if !strings.EqualFold(binding, BindingJSONRPC) {
			others = append(others, fmt.Sprintf("%s at %s", binding, o.url))
			continue
		}
		jsonrpc = append(jsonrpc, fmt.Sprintf("version %q at %s", o.version, o.url))
		switch protocolGeneration(o.version) {
		case "1":
			return resolveEndpoint(base, o.url, false)
		case "0.3":
			if legacy == nil {
				legacy = o
			}
		}
	}
	if legacy != nil {
		return resolveEndpoint(base, legacy.url, true)
	}
	if len(jsonrpc) > 0 {
		return endpoint{}, fmt.Errorf("%w: the card offers JSON-RPC only in %s; this client speaks %s and %s",
			ErrUnsupportedVersion, strings.Join(jsonrpc, ", "), Version, LegacyVersion)
	}
	if len(others) > 0 {
		return endpoint{}, fmt.Errorf("%w: the card offers %s", ErrNoJSONRPC, strings.Join(others, ", "))
	}
	return endpoint{}, fmt.Errorf("%w: the card lists no interface (neither supportedInterfaces nor url)", ErrNoJSONRPC)
}

func resolveEndpoint(base *url.URL, raw string, legacy bool) (endpoint, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || raw == "" {
		return endpoint{}, fmt.Errorf("%w: interface URL %q is not a URL", ErrInvalidCard, raw)
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, fmt.Errorf("%w: interface URL %q is not an http or https URL", ErrInvalidCard, raw)
	}
	return endpoint{url: u.String(), legacy: legacy}, nil
}

// check reports what makes the card unusable, if anything.
func (c *Card) check() error {
	if strings.TrimSpace(c.Name) == "" {
		return fmt.Errorf("%w: it has no name", ErrInvalidCard)
	}
	return nil
}

// streams reports whether the card says the agent streams.
func (c *Card) streams() bool { return c.Capabilities.Streaming }

// cardURL returns the address of the card of the agent at base: base
// itself when it names a JSON document, else base with CardPath.
func cardURL(base string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		return nil, fmt.Errorf("a2a: base URL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("a2a: base URL %q: want an absolute http or https URL", base)
	}
	if strings.HasSuffix(u.Path, ".json") {
		return u, nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + CardPath
	u.RawPath = ""
	return u, nil
}

// toolName derives a tool name from an agent's name: lower case, with runs
// of other characters than letters and digits made one '_', at most 64
// characters; "remote_agent" when nothing is left.
func toolName(name string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
			under = false
		case !under && b.Len() > 0:
			b.WriteByte('_')
			under = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	s := strings.Trim(b.String(), "_-")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "remote_agent"
	}
	return s
}

// describe returns a tool description from the card: its description and
// its skills.
func (c *Card) describe() string {
	var b strings.Builder
	desc := strings.TrimSpace(c.Description)
	if desc == "" {
		desc = "A remote agent named " + strconv.Quote(c.Name) + "."
	}
	b.WriteString(desc)
	for i, s := range c.Skills {
		if i == 0 {
			b.WriteString("\n\nSkills:")
		}
		if i == 8 {
			fmt.Fprintf(&b, "\n- and %d more", len(c.Skills)-i)
			break
		}
		line := strings.TrimSpace(s.Name)
		if d := strings.TrimSpace(s.Description); d != "" {
			if line != "" {
				line += ": "
			}
			line += d
		}
		b.WriteString("\n- " + textcut.Clip(oneLine(line), 200, "..."))
	}
	b.WriteString("\n\nGive the agent a task stated so that it can be done without asking back. To continue an earlier conversation with it (to answer its question, or to follow up), pass the context_id its answer gave.")
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
