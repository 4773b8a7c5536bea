package coding

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/shell"
	"github.com/trellis-go/trellis/tool/webfetch"
	"github.com/trellis-go/trellis/tool/websearch"
	"github.com/trellis-go/trellis/tool/workspace"
)

// DefaultName is the set's name unless WithName says otherwise.
const DefaultName = "coding"

// ErrClosed is returned by Tools after Close.
var ErrClosed = errors.New("coding: toolset closed")

// Option configures New.
type Option func(*config)

type config struct {
	name        string
	readOnly    bool
	maxFileSize int64
	sizeSet     bool
	noShell     bool
	commands    tool.Toolset
	noWeb       bool
	searchTool  tool.Tool
	workspace   []workspace.Option
	shell       []shell.Option
	fetch       []webfetch.Option
	search      []websearch.Option
	ddg         []websearch.BackendOption
}

// WithName names the set (DefaultName unless set), for errors and logs.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithReadOnly leaves out the file tools that write: write_file, edit_file
// and notebook_edit. The shell stays unless WithoutShell is given too.
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WithMaxFileSize bounds the files the file tools read, search and edit
// (workspace.WithMaxFileSize). n must be at least 1.
func WithMaxFileSize(n int64) Option {
	return func(c *config) { c.maxFileSize, c.sizeSet = n, true }
}

// WithoutShell leaves out bash, task_output and task_stop.
func WithoutShell() Option { return func(c *config) { c.noShell = true } }

// WithCommands runs the model's commands with set instead of a shell on the
// host: for instance a docker.Toolset whose container mounts the
// directory, so that the file tools and the commands see the same files
// while the commands run in a sandbox. The set's tools take the shell's
// place; the set is closed with the toolset (also when New fails). It
// cannot be combined with WithoutShell or WithShellOptions.
func WithCommands(set tool.Toolset) Option { return func(c *config) { c.commands = set } }

// WithoutWeb leaves out web_fetch and the search tool (web_search over
// DuckDuckGo, or the tool of WithSearch).
func WithoutWeb() Option { return func(c *config) { c.noWeb = true } }

// WithSearch puts t in the default search tool's place: for instance a
// websearch tool over SearXNG or Brave Search, which list general web
// pages where DuckDuckGo's Instant Answer API, the default's backend, knows
// topics and facts. A nil t keeps the default, and WithoutWeb leaves t out
// with web_fetch. It cannot be combined with WithSearchOptions or
// WithSearchBackendOptions, which configure the default.
func WithSearch(t tool.Tool) Option { return func(c *config) { c.searchTool = t } }

// WithWorkspaceOptions passes options to workspace.New.
func WithWorkspaceOptions(opts ...workspace.Option) Option {
	return func(c *config) { c.workspace = append(c.workspace, opts...) }
}

// WithShellOptions passes options to shell.New.
func WithShellOptions(opts ...shell.Option) Option {
	return func(c *config) { c.shell = append(c.shell, opts...) }
}

// WithWebFetchOptions passes options to webfetch.NewTool: the domains the
// tool may fetch, its timeout, its size limits.
func WithWebFetchOptions(opts ...webfetch.Option) Option {
	return func(c *config) { c.fetch = append(c.fetch, opts...) }
}

// WithSearchOptions passes options to websearch.New, for the default
// search tool (web_search over DuckDuckGo's Instant Answer API).
func WithSearchOptions(opts ...websearch.Option) Option {
	return func(c *config) { c.search = append(c.search, opts...) }
}

// WithSearchBackendOptions passes options to websearch.NewDuckDuckGo, the
// backend of the default search tool: its address, User-Agent, client or
// proxy.
func WithSearchBackendOptions(opts ...websearch.BackendOption) Option {
	return func(c *config) { c.ddg = append(c.ddg, opts...) }
}

// Toolset is the combined set. It is a tool.Toolset; its tools are the
// workspace's, then the shell's, then the web tools, in that order.
type Toolset struct {
	name     string
	ws       *workspace.Toolset
	sh       *shell.Toolset
	commands tool.Toolset
	web      []tool.Tool

	mu     sync.Mutex
	closed bool
}

// New returns the set for the directory dir, which must exist. A part that
// cannot be built (a bad option, a missing shell) fails New with an error
// that names the part, and closes the parts already built.
func New(dir string, opts ...Option) (*Toolset, error) {
	c := config{name: DefaultName}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	// fail closes the command set New was given, which New owns.
	fail := func(err error) (*Toolset, error) {
		if c.commands != nil {
			err = errors.Join(err, c.commands.Close())
		}
		return nil, err
	}
	if c.name == "" {
		return fail(errors.New("coding: WithName: the name is empty"))
	}
	if c.sizeSet && c.maxFileSize < 1 {
		return fail(fmt.Errorf("coding: WithMaxFileSize(%d): the size must be at least 1", c.maxFileSize))
	}
	if c.commands != nil && (c.noShell || len(c.shell) > 0) {
		return fail(errors.New("coding: WithCommands replaces the shell: it cannot be combined with WithoutShell or WithShellOptions"))
	}
	if c.searchTool != nil && (len(c.search) > 0 || len(c.ddg) > 0) {
		return fail(errors.New("coding: WithSearch replaces the default search tool: it cannot be combined with WithSearchOptions or WithSearchBackendOptions, which configure the default"))
	}
	wsOpts := append([]workspace.Option(nil), c.workspace...)
	if c.readOnly {
		wsOpts = append(wsOpts, workspace.WithReadOnly())
	}
	if c.sizeSet {
		wsOpts = append(wsOpts, workspace.WithMaxFileSize(c.maxFileSize))
	}
	t := &Toolset{name: c.name}
	var err error
	if t.ws, err = workspace.New(dir, wsOpts...); err != nil {
		return fail(fmt.Errorf("coding: file tools: %w", err))
	}
	switch {
	case c.commands != nil:
		t.commands = c.commands
	case !c.noShell:
		if t.sh, err = shell.New(dir, c.shell...); err != nil {
			t.ws.Close()
			return nil, fmt.Errorf("coding: shell: %w", err)
		}
	}
	if !c.noWeb {
		fetch, err := webfetch.NewTool(c.fetch...)
		if err == nil {
			search := c.searchTool
			if search == nil {
				search, err = defaultSearch(c.search, c.ddg)
			}
			if err == nil {
				t.web = []tool.Tool{fetch, search}
			}
		}
		if err != nil {
			t.closeParts()
			return nil, fmt.Errorf("coding: web tools: %w", err)
		}
	}
	return t, nil
}

// defaultSearch is the search tool of a set without WithSearch: web_search
// over DuckDuckGo's Instant Answer API, which needs no key.
func defaultSearch(opts []websearch.Option, backend []websearch.BackendOption) (tool.Tool, error) {
	ddg, err := websearch.NewDuckDuckGo(backend...)
	if err != nil {
		return nil, err
	}
	return websearch.New(ddg, opts...)
}

// Name returns the set's name.
func (t *Toolset) Name() string { return t.name }

// Tools returns the tools of the parts the set holds. After Close it
// returns ErrClosed.
func (t *Toolset) Tools(ctx context.Context) ([]tool.Tool, error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: %s", ErrClosed, t.name)
	}
	out, err := t.ws.Tools(ctx)
	if err != nil {
		return nil, err
	}
	if t.sh != nil {
		sh, err := t.sh.Tools(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, sh...)
	}
	if t.commands != nil {
		cmds, err := t.commands.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("coding: command tools %q: %w", t.commands.Name(), err)
		}
		out = append(out, cmds...)
	}
	return append(out, t.web...), nil
}

// Workspace returns the file tools' set.
func (t *Toolset) Workspace() *workspace.Toolset { return t.ws }

// Shell returns the shell's set, or nil when WithoutShell or WithCommands
// left it out.
func (t *Toolset) Shell() *shell.Toolset { return t.sh }

// Close kills the shell's running commands and background tasks, waits
// for them, and releases the workspace. Closing twice is harmless.
func (t *Toolset) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	return t.closeParts()
}

func (t *Toolset) closeParts() error {
	var errs []error
	if t.sh != nil {
		errs = append(errs, t.sh.Close())
	}
	if t.commands != nil {
		errs = append(errs, t.commands.Close())
	}
	errs = append(errs, t.ws.Close())
	return errors.Join(errs...)
}

var _ tool.Toolset = (*Toolset)(nil)
