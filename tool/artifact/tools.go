package artifact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The names of the tools Tools returns, and of their toolset by default.
const (
	ListName           = "list_artifacts"
	LoadName           = "load_artifact"
	SaveName           = "save_artifact"
	DefaultToolsetName = "artifacts"
)

// Default limits of load_artifact.
const (
	// DefaultMaxLoadSize is the most bytes of an artifact load_artifact
	// puts into the conversation unless WithMaxLoadSize says otherwise.
	DefaultMaxLoadSize = 5 << 20
	// DefaultMaxTextSize is the most bytes of text or JSON load_artifact
	// shows unless WithMaxTextSize says otherwise.
	DefaultMaxTextSize = 32 << 10
)

// ListArgs are the arguments of list_artifacts: none.
type ListArgs struct{}

// Listed is one artifact list_artifacts shows: its latest version.
type Listed struct {
	// Name is the artifact's name.
	Name string `json:"name"`
	// Version is the latest version's number.
	Version int `json:"latest_version"`
	// Size is the latest version's size in bytes.
	Size int64 `json:"size"`
	// MediaType is the latest version's media type.
	MediaType string `json:"media_type"`
	// Saved is when the latest version was saved, in RFC 3339.
	Saved string `json:"saved"`
}

// ListResult is what list_artifacts returns.
type ListResult struct {
	Artifacts []Listed `json:"artifacts"`
}

// LoadArgs are the arguments of load_artifact.
type LoadArgs struct {
	Name    string `json:"name" jsonschema:"description=The artifact's name\\, as list_artifacts shows it,minLength=1"`
	Version int    `json:"version,omitempty" jsonschema:"description=Which version to load (default: the latest),minimum=1"`
}

// LoadDetails are the Details of a load_artifact result, for logs and user
// interfaces.
type LoadDetails struct {
	// Info describes the version loaded.
	Info Info `json:"info"`
	// Shown is how the content was shown: "text", "json", "image" or
	// "description" (binary content, or content too large to show).
	Shown string `json:"shown"`
	// Truncated says text or JSON was cut to the limit.
	Truncated bool `json:"truncated,omitempty"`
}

// SaveArgs are the arguments of save_artifact.
type SaveArgs struct {
	Name      string `json:"name" jsonschema:"description=A file name such as report.md or data.csv; start it with user: to keep it for the user across conversations,minLength=1"`
	Content   string `json:"content" jsonschema:"description=The text to save"`
	MediaType string `json:"media_type,omitempty" jsonschema:"description=The media type\\, such as text/markdown or text/csv (default: from the name's extension)"`
}

// SaveResult is what save_artifact returns.
type SaveResult struct {
	// Name is the artifact's name.
	Name string `json:"name"`
	// Version is the number of the version saved.
	Version int `json:"version"`
	// Size is the content's size in bytes.
	Size int `json:"size"`
	// MediaType is the media type it was saved with.
	MediaType string `json:"media_type"`
}

// ToolsOption configures the toolset Tools returns.
type ToolsOption func(*toolsConfig)

type toolsConfig struct {
	name     string
	readOnly bool
	noImages bool
	maxLoad  int
	maxText  int
	problems []string
}

// WithReadOnly offers list_artifacts and load_artifact alone: the model
// can read artifacts but not save them.
func WithReadOnly() ToolsOption { return func(c *toolsConfig) { c.readOnly = true } }

// WithMaxLoadSize caps the bytes of an artifact load_artifact puts into
// the conversation (DefaultMaxLoadSize unless set): an image larger than
// that is described instead of shown, and text and JSON are cut to it (or
// to WithMaxTextSize, the smaller). n must be positive.
func WithMaxLoadSize(n int) ToolsOption {
	return func(c *toolsConfig) {
		if n <= 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxLoadSize: %d is not positive", n))
		}
		c.maxLoad = n
	}
}

// WithMaxTextSize caps the bytes of text or JSON load_artifact shows
// (DefaultMaxTextSize unless set); the rest is cut off, and the result
// says so. n must be positive.
func WithMaxTextSize(n int) ToolsOption {
	return func(c *toolsConfig) {
		if n <= 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxTextSize: %d is not positive", n))
		}
		c.maxText = n
	}
}

// WithoutImages makes load_artifact describe images rather than show them,
// for models whose provider takes no images in tool results.
func WithoutImages() ToolsOption { return func(c *toolsConfig) { c.noImages = true } }

// WithToolsetName names the toolset (DefaultToolsetName unless set), for
// errors and logs.
func WithToolsetName(name string) ToolsOption {
	return func(c *toolsConfig) {
		if name == "" {
			c.problems = append(c.problems, "WithToolsetName: the name is empty")
		}
		c.name = name
	}
}

// Tools returns a toolset that gives a model the artifacts of store:
// list_artifacts (the latest version of each artifact: name, version,
// size, media type, time), load_artifact (a name and an optional
// version; it answers with the content) and save_artifact (a name, text
// content and an optional media type; it answers with the new version).
// With WithReadOnly it holds the first two alone.
//
// Every call works in the scope of its run (see ScopeFromContext): the
// run's thread, and the app and user of the context.
//
// load_artifact shows an artifact as its media type allows: text (text/*,
// XML, YAML, JavaScript and the like, when valid UTF-8) as a text part;
// JSON (application/json, +json) as a JSON part; PNG, JPEG, GIF and WebP
// images as an image part; anything else, and images larger than
// WithMaxLoadSize, as a short description, never as raw bytes. Text and
// JSON longer than WithMaxTextSize are cut, as text, with a note saying
// how much was shown. A text part before the content names the artifact,
// its version and its type. The result's Details is a LoadDetails.
//
// Calls the store refuses (an invalid name, a missing artifact, one too
// large) are error results that say why. The three tools are
// concurrency-safe; the first two read-only.
func Tools(store Store, opts ...ToolsOption) (*tool.Static, error) {
	c := toolsConfig{name: DefaultToolsetName, maxLoad: DefaultMaxLoadSize, maxText: DefaultMaxTextSize}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if store == nil {
		c.problems = append(c.problems, "the store is nil")
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: artifact toolset %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	list, err := tool.NewFunc(ListName,
		"List the artifacts (files such as reports, images and data) saved in this conversation, and the user's "+
			"(names starting with user:), with each one's latest version, size in bytes and media type. "+
			"Load one with "+LoadName+".",
		func(ctx context.Context, _ ListArgs) (ListResult, error) {
			infos, err := store.List(ctx, ScopeFromContext(ctx))
			if err != nil {
				return ListResult{}, err
			}
			out := ListResult{Artifacts: make([]Listed, len(infos))}
			for i, in := range infos {
				out.Artifacts[i] = Listed{Name: in.Name, Version: in.Version, Size: in.Size, MediaType: in.MediaType, Saved: in.Saved.UTC().Format(time.RFC3339)}
			}
			return out, nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("List artifacts"))
	if err != nil {
		return nil, err
	}
	load, err := tool.NewFunc(LoadName,
		"Load an artifact into the conversation by name (as "+ListName+" shows it), the latest version unless "+
			"you give one: text and JSON are shown (long ones cut), images are shown as images, other files are described.",
		func(ctx context.Context, in LoadArgs) (tool.Result, error) {
			return c.load(ctx, store, in)
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Load artifact"))
	if err != nil {
		return nil, err
	}
	if c.readOnly {
		return tool.NewStatic(c.name, list, load), nil
	}
	save, err := tool.NewFunc(SaveName,
		"Save text as a named artifact (a report, a table, code, notes) that stays out of the conversation until "+
			"loaded with "+LoadName+". Saving a name again makes a new version. Names start with user: to keep "+
			"the artifact for the user across conversations.",
		func(ctx context.Context, in SaveArgs) (SaveResult, error) {
			a := Artifact{Data: []byte(in.Content), MediaType: in.MediaType}
			scope := ScopeFromContext(ctx)
			v, err := store.Save(ctx, scope, in.Name, a)
			if err != nil {
				return SaveResult{}, err
			}
			out := SaveResult{Name: in.Name, Version: v, Size: len(in.Content), MediaType: strings.TrimSpace(in.MediaType)}
			if out.MediaType == "" {
				out.MediaType = guessType(in.Name, a.Data) // as Prepare did
			}
			return out, nil
		},
		tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}),
		tool.WithTitle("Save artifact"))
	if err != nil {
		return nil, err
	}
	return tool.NewStatic(c.name, list, load, save), nil
}

// load runs load_artifact.
func (c *toolsConfig) load(ctx context.Context, store Store, in LoadArgs) (tool.Result, error) {
	scope := ScopeFromContext(ctx)
	vs, err := store.Versions(ctx, scope, in.Name)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("%w; %s shows the artifacts there are", err, ListName)
		}
		return tool.Result{}, err
	}
	latest := vs[len(vs)-1]
	info := latest
	if in.Version != 0 {
		found := false
		for _, v := range vs {
			if v.Version == in.Version {
				info, found = v, true
			}
		}
		if !found {
			return tool.Result{}, fmt.Errorf("%w: artifact %q has no version %d (the latest is %d)", ErrNotFound, in.Name, in.Version, latest.Version)
		}
	}
	// Loaded by number, so that a version saved meanwhile does not
	// answer for the one described.
	a, err := store.Load(ctx, scope, in.Name, info.Version)
	if err != nil {
		return tool.Result{}, err
	}
	parts, details := c.render(info, latest.Version, a)
	return tool.Result{Content: parts, Details: details, Status: tool.StatusSuccess}, nil
}

// render turns an artifact into the parts load_artifact answers with.
func (c *toolsConfig) render(info Info, latest int, a Artifact) ([]model.Part, LoadDetails) {
	d := LoadDetails{Info: info}
	size := len(a.Data)
	head := fmt.Sprintf("Artifact %q, version %d of %d (%s, %d bytes)", info.Name, info.Version, latest, a.MediaType, size)
	describe := func(why string) []model.Part {
		d.Shown = "description"
		return []model.Part{model.TextPart(head + ": " + why)}
	}
	base, _, err := mime.ParseMediaType(a.MediaType)
	if err != nil {
		base = strings.ToLower(strings.TrimSpace(a.MediaType))
	}
	maxText := min(c.maxText, c.maxLoad)
	switch {
	case isImage(base):
		switch {
		case c.noImages:
			return describe("an image, which cannot be shown here."), d
		case size > c.maxLoad:
			return describe(fmt.Sprintf("an image too large to show (the limit is %d bytes).", c.maxLoad)), d
		}
		d.Shown = "image"
		return []model.Part{model.TextPart(head + ":\n"), model.ImagePart(base, a.Data)}, d
	case isJSON(base) && size <= maxText && json.Valid(a.Data):
		d.Shown = "json"
		return []model.Part{model.TextPart(head + ":\n"), model.JSONPart(json.RawMessage(a.Data))}, d
	case (isText(base) || isJSON(base)) && utf8.Valid(a.Data):
		d.Shown = "text"
		text := string(a.Data)
		if len(text) <= maxText {
			return []model.Part{model.TextPart(head + ":\n"), model.TextPart(text)}, d
		}
		d.Truncated = true
		shown := textcut.Prefix(text, maxText)
		return []model.Part{
			model.TextPart(head + ":\n"),
			model.TextPart(shown),
			model.TextPart(fmt.Sprintf("\n[artifact cut: showing the first %d of %d bytes]", len(shown), size)),
		}, d
	case isText(base) || isJSON(base):
		return describe("text that is not valid UTF-8, which cannot be shown here."), d
	}
	return describe("binary data, which cannot be shown here."), d
}

// isImage reports whether t is an image type models take.
func isImage(t string) bool {
	switch t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// isJSON reports whether t is a JSON type.
func isJSON(t string) bool {
	return t == "application/json" || t == "text/json" || strings.HasSuffix(t, "+json")
}

// isText reports whether t is a type of text.
func isText(t string) bool {
	if strings.HasPrefix(t, "text/") || strings.HasSuffix(t, "+xml") || strings.HasSuffix(t, "+yaml") {
		return true
	}
	switch t {
	case "application/xml", "application/yaml", "application/x-yaml", "application/toml",
		"application/javascript", "application/ecmascript", "application/x-sh", "application/sql",
		"application/x-ndjson", "application/jsonl", "application/csv", "application/markdown":
		return true
	}
	return false
}
