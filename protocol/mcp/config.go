package mcp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Transport names how a toolset reaches its MCP server.
type Transport string

// The transports.
const (
	// TransportStdio runs a command and speaks MCP over its standard input
	// and output.
	TransportStdio Transport = "stdio"
	// TransportStreamableHTTP speaks MCP's streamable HTTP transport to a URL.
	TransportStreamableHTTP Transport = "streamable_http"
	// TransportSSE speaks the older HTTP+SSE transport (protocol version
	// 2024-11-05) to a URL: the URL is the event stream's endpoint.
	TransportSSE Transport = "sse"
)

// Defaults of a Config's zero fields.
const (
	// DefaultConnectTimeout bounds connecting, the handshake and the first
	// listing of tools.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultTerminateWait is how long closing a stdio server waits for the
	// process to exit after its input is closed, before it is signalled.
	DefaultTerminateWait = 2 * time.Second
)

// Config says where an MCP server is and how to reach it.
//
// For stdio, set Command (and Args, Env, Dir); for streamable HTTP or SSE,
// set URL (and Headers). Transport may be left empty: a Command means stdio
// and a URL means streamable HTTP; SSE must be named.
type Config struct {
	// Name identifies the server in tool errors, logs and the broker. Empty
	// means the command's base name or the URL's host.
	Name string `json:"name,omitempty"`
	// Description says what the server offers; the broker shows it to the
	// model when it lists servers.
	Description string `json:"description,omitempty"`
	// Transport selects the transport; see the type's constants.
	Transport Transport `json:"transport,omitempty"`

	// Command is the program to run for stdio. It is looked up in PATH when
	// it contains no path separator.
	Command string `json:"command,omitempty"`
	// Args are the command's arguments.
	Args []string `json:"args,omitempty"`
	// Env holds variables added to the environment the command inherits.
	Env map[string]string `json:"env,omitempty"`
	// Dir is the command's working directory; empty means the current one.
	Dir string `json:"dir,omitempty"`

	// URL is the server's endpoint for streamable HTTP or SSE.
	URL string `json:"url,omitempty"`
	// Headers are sent with every HTTP request. A header function
	// (WithHeaderFunc) runs after them and may override them.
	Headers map[string]string `json:"headers,omitempty"`

	// Roots are the directories and files the server may work in
	// (roots/list), as file:// URIs. Servers are told that the list may
	// change (roots.listChanged).
	Roots []Root `json:"roots,omitempty"`

	// ConnectTimeout bounds one connection attempt: starting the command or
	// reaching the URL, the initialize handshake and listing the tools.
	// Zero means DefaultConnectTimeout. It stands still while a person
	// signs in (OAuth.SignInTimeout bounds that).
	ConnectTimeout time.Duration `json:"connect_timeout,omitempty"`
	// CallTimeout, when positive, bounds each tool call; otherwise only the
	// call's context does.
	CallTimeout time.Duration `json:"call_timeout,omitempty"`
	// TerminateWait is how long closing a stdio server waits for the process
	// to exit on its own before it is sent SIGTERM (and later SIGKILL).
	// Zero means DefaultTerminateWait.
	TerminateWait time.Duration `json:"terminate_wait,omitempty"`
}

// Root is a directory or file an MCP server may work in.
type Root struct {
	// URI is a file:// URI ("file:///home/ann/project").
	URI string `json:"uri"`
	// Name is a name to show for it.
	Name string `json:"name,omitempty"`
}

// transport returns the transport c uses, inferring it when unset.
func (c Config) transport() Transport {
	switch {
	case c.Transport != "":
		return c.Transport
	case c.Command != "":
		return TransportStdio
	case c.URL != "":
		return TransportStreamableHTTP
	}
	return ""
}

// ServerName returns the name c identifies its server by: Name, else the
// base name of Command, else the host of URL.
func (c Config) ServerName() string {
	if c.Name != "" {
		return c.Name
	}
	if c.Command != "" {
		return filepath.Base(c.Command)
	}
	if u, err := url.Parse(c.URL); err == nil && u.Host != "" {
		return u.Host
	}
	return "mcp"
}

func (c Config) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (c Config) terminateWait() time.Duration {
	if c.TerminateWait > 0 {
		return c.TerminateWait
	}
	return DefaultTerminateWait
}

// Validate reports what is missing or wrong in c, as an error wrapping
// ErrInvalidConfig. It does not start or reach anything.
func (c Config) Validate() error {
	var problems []string
	switch t := c.transport(); t {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			problems = append(problems, "the stdio transport needs a command")
		}
		if c.URL != "" {
			problems = append(problems, "a stdio server takes no URL")
		}
	case TransportStreamableHTTP, TransportSSE:
		if c.URL == "" {
			problems = append(problems, fmt.Sprintf("the %s transport needs a URL", t))
		} else if err := checkHTTPURL(c.URL); err != nil {
			problems = append(problems, err.Error())
		}
		if c.Command != "" {
			problems = append(problems, fmt.Sprintf("a %s server takes no command", t))
		}
	case "":
		problems = append(problems, "set a command (stdio) or a URL (streamable HTTP or SSE)")
	default:
		problems = append(problems, fmt.Sprintf("unknown transport %s (want %q, %q or %q)",
			quote(string(t)), TransportStdio, TransportStreamableHTTP, TransportSSE))
	}
	for _, r := range c.Roots {
		if u, err := url.Parse(r.URI); err != nil || u.Scheme != "file" {
			problems = append(problems, fmt.Sprintf("root %s is not a file:// URI", quoteN(r.URI, maxShownURL)))
		}
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			problems = append(problems, fmt.Sprintf("invalid header name %s", quote(k)))
		}
	}
	if c.ConnectTimeout < 0 || c.CallTimeout < 0 || c.TerminateWait < 0 {
		problems = append(problems, "timeouts must not be negative")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: server %s: %s", ErrInvalidConfig, quote(c.ServerName()), strings.Join(problems, "; "))
}

// checkHTTPURL checks that raw is an absolute http or https URL.
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL %s", quoteN(raw, maxShownURL))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %s must use http or https", showURL(u))
	}
	if u.Host == "" {
		return fmt.Errorf("URL %s has no host", showURL(u))
	}
	return nil
}
