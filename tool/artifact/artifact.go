package artifact

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Errors the stores return, wrapped with what was wrong; test for them
// with errors.Is.
var (
	// ErrNotFound: no artifact of that name in the scope, or no such
	// version of it.
	ErrNotFound = errors.New("artifact not found")
	// ErrInvalidName: the name breaks the rules of CheckName.
	ErrInvalidName = errors.New("invalid artifact name")
	// ErrTooLarge: the artifact's data or metadata exceeds the store's
	// limit.
	ErrTooLarge = errors.New("artifact too large")
	// ErrInvalidArtifact: the artifact cannot be stored as it is (a media
	// type that does not parse, metadata that is not UTF-8, a negative
	// version).
	ErrInvalidArtifact = errors.New("invalid artifact")
	// ErrNoStore: the context carries no store (see WithStore).
	ErrNoStore = errors.New("no artifact store in the context")
)

// UserPrefix starts the names of user-scoped artifacts: an artifact named
// "user:profile.png" lives in the user's scope, shared by all of the
// user's threads, whatever thread the scope given with it names.
const UserPrefix = "user:"

// Limits of names and metadata.
const (
	// MaxNameLength is the most bytes a name may have, UserPrefix
	// included.
	MaxNameLength = 200
	// MaxMetadataSize is the most bytes an artifact's metadata may have,
	// its keys and values added up.
	MaxMetadataSize = 64 << 10
	// DefaultMaxSize is the most bytes of data a store accepts in one
	// artifact unless WithMaxSize says otherwise.
	DefaultMaxSize = 32 << 20
)

// Scope says whom an artifact belongs to. App and User separate the
// artifacts of applications and users sharing a store; Thread is the
// conversation. A scope with an empty Thread is the user's own scope,
// shared by all of their threads.
//
// Every Store method resolves a name against the scope it is given (see
// Scope.For): a name that starts with UserPrefix always refers to the
// user's scope, any other name to the scope as given, so a thread reaches
// its own artifacts by plain names and the user's by "user:" names.
type Scope struct {
	// App names the application.
	App string `json:"app,omitempty"`
	// User names the user.
	User string `json:"user,omitempty"`
	// Thread names the conversation; "" for the user's own scope.
	Thread string `json:"thread,omitempty"`
}

// UserScope returns s without its thread: the user's scope.
func (s Scope) UserScope() Scope { return Scope{App: s.App, User: s.User} }

// For returns the scope an artifact named name lives in when named from
// s: the user's scope for a name that starts with UserPrefix, s itself for
// any other.
func (s Scope) For(name string) Scope {
	if IsUserName(name) {
		return s.UserScope()
	}
	return s
}

// String describes the scope for errors and logs.
func (s Scope) String() string {
	if s.Thread == "" {
		return fmt.Sprintf("app %q, user %q", s.App, s.User)
	}
	return fmt.Sprintf("app %q, user %q, thread %q", s.App, s.User, s.Thread)
}

// IsUserName reports whether name starts with UserPrefix, which puts the
// artifact in the user's scope.
func IsUserName(name string) bool { return strings.HasPrefix(name, UserPrefix) }

// Artifact is one version of a named file: its bytes, their media type and
// string pairs of the application's. The model never sees the metadata.
type Artifact struct {
	// Data is the content.
	Data []byte `json:"data"`
	// MediaType is the content's type, for example "text/csv" or
	// "image/png". Save fills in an empty one from the name's extension, or
	// else from the content (see Prepare).
	MediaType string `json:"media_type"`
	// Metadata is the application's: who made the artifact, from what.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Info describes a version of an artifact without its data: in List, the
// latest version of each artifact; in Versions, each version.
type Info struct {
	// Name is the artifact's name, UserPrefix included for a user-scoped
	// one.
	Name string `json:"name"`
	// Version is the version's number; versions count from 1.
	Version int `json:"version"`
	// Size is the length of the version's data in bytes.
	Size int64 `json:"size"`
	// MediaType is the version's media type.
	MediaType string `json:"media_type"`
	// Saved is when the version was saved.
	Saved time.Time `json:"saved"`
	// Metadata is the version's metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Store keeps named, versioned artifacts by scope. Implementations are
// safe for concurrent use. Every method resolves its name against the
// scope (see Scope.For) and checks it with CheckName first.
type Store interface {
	// Save stores a as a new version of the artifact name and returns the
	// version's number: 1 for a new artifact, one more than the latest
	// for an existing one. The store keeps its own copy of a.
	Save(ctx context.Context, scope Scope, name string, a Artifact) (version int, err error)
	// Load returns a version of the artifact name; version 0 means the
	// latest. A missing artifact or version matches ErrNotFound. The
	// caller may modify what it gets.
	Load(ctx context.Context, scope Scope, name string, version int) (Artifact, error)
	// List describes the latest version of every artifact a Load from
	// scope can reach, sorted by name: the scope's own and, when scope
	// names a thread, the user's artifacts whose names start with
	// UserPrefix.
	List(ctx context.Context, scope Scope) ([]Info, error)
	// Versions describes every version of the artifact name, oldest
	// first. A missing artifact matches ErrNotFound.
	Versions(ctx context.Context, scope Scope, name string) ([]Info, error)
	// Delete removes the artifact name with all its versions; a later
	// Save of the name starts again at version 1. A missing artifact
	// matches ErrNotFound.
	Delete(ctx context.Context, scope Scope, name string) error
}

// CheckName reports whether name may name an artifact: it must be 1 to
// MaxNameLength bytes of valid UTF-8, without control characters, without
// '/' or '\', without "..", not "." and without spaces at its ends. After
// UserPrefix, the rest must follow the same rules. The error matches
// ErrInvalidName and says which rule the name breaks.
func CheckName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidName, name, why) }
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrInvalidName)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: the name is %d bytes long, more than %d", ErrInvalidName, len(name), MaxNameLength)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: the name is not valid UTF-8", ErrInvalidName, name)
	}
	rest := strings.TrimPrefix(name, UserPrefix)
	switch {
	case rest == "":
		return bad("nothing follows " + UserPrefix)
	case strings.ContainsAny(rest, `/\`):
		return bad("names may not contain '/' or '\\' (artifacts have no folders)")
	case strings.Contains(rest, ".."):
		return bad(`names may not contain ".."`)
	case rest == ".":
		return bad(`"." is not a name`)
	case strings.TrimSpace(rest) != rest:
		return bad("names may not start or end with spaces")
	}
	for _, r := range rest {
		if unicode.IsControl(r) {
			return bad(fmt.Sprintf("names may not contain control characters (%U)", r))
		}
	}
	return nil
}

// maxMediaType is the length, in bytes, of the longest media type a store
// takes.
const maxMediaType = 1024

// Prepare checks what Save is given and returns the artifact as a store
// keeps it: the name checked with CheckName, the data no larger than
// maxSize bytes (no limit when maxSize is not positive), the metadata
// valid UTF-8 and no larger than MaxMetadataSize, and the media type (at
// most 1024 bytes) parsed or, when empty,
// taken from the name's extension or else guessed from the first bytes of
// the data (text/plain, image/png, application/octet-stream, ...). The
// data and metadata are copies. Stores of other packages call it to keep
// the rules of this one.
func Prepare(name string, a Artifact, maxSize int64) (Artifact, error) {
	if err := CheckName(name); err != nil {
		return Artifact{}, err
	}
	if maxSize > 0 && int64(len(a.Data)) > maxSize {
		return Artifact{}, fmt.Errorf("%w: artifact %q has %d bytes of data, more than the store's limit of %d", ErrTooLarge, name, len(a.Data), maxSize)
	}
	meta := 0
	for k, v := range a.Metadata {
		meta += len(k) + len(v)
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return Artifact{}, fmt.Errorf("%w: artifact %q: the metadata is not valid UTF-8", ErrInvalidArtifact, name)
		}
	}
	if meta > MaxMetadataSize {
		return Artifact{}, fmt.Errorf("%w: artifact %q has %d bytes of metadata, more than %d", ErrTooLarge, name, meta, MaxMetadataSize)
	}
	mt := strings.TrimSpace(a.MediaType)
	if len(mt) > maxMediaType {
		return Artifact{}, fmt.Errorf("%w: artifact %q: the media type is %d bytes long, more than %d", ErrInvalidArtifact, name, len(mt), maxMediaType)
	}
	if mt == "" {
		mt = guessType(name, a.Data)
	} else if _, _, err := mime.ParseMediaType(mt); err != nil {
		return Artifact{}, fmt.Errorf("%w: artifact %q: media type %q: %w", ErrInvalidArtifact, name, a.MediaType, err)
	}
	out := Artifact{Data: append([]byte{}, a.Data...), MediaType: mt}
	if len(a.Metadata) > 0 {
		out.Metadata = maps.Clone(a.Metadata)
	}
	return out, nil
}

// guessType returns the media type of the name's extension, or else the
// one the data sniffs as.
func guessType(name string, data []byte) string {
	if ext := path.Ext(strings.TrimPrefix(name, UserPrefix)); ext != "" {
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
	}
	return http.DetectContentType(data)
}

// checkVersion refuses a negative version.
func checkVersion(name string, version int) error {
	if version < 0 {
		return fmt.Errorf("%w: artifact %q: version %d: versions count from 1 (0 means the latest)", ErrInvalidArtifact, name, version)
	}
	return nil
}

// notFound is the error of a missing artifact or version.
func notFound(name string, version, latest int) error {
	if version == 0 || latest == 0 {
		return fmt.Errorf("%w: no artifact %q", ErrNotFound, name)
	}
	return fmt.Errorf("%w: artifact %q has no version %d (the latest is %d)", ErrNotFound, name, version, latest)
}

// Option configures a store made by NewMemory or NewDir.
type Option func(*options)

type options struct {
	maxSize int64
	now     func() time.Time
}

func newOptions(opts []Option) options {
	o := options{maxSize: DefaultMaxSize, now: time.Now}
	for _, fn := range opts {
		if fn != nil {
			fn(&o)
		}
	}
	return o
}

// WithMaxSize caps the bytes of data of one artifact (DefaultMaxSize
// unless set); Save refuses a larger one with an error that matches
// ErrTooLarge. Zero or less means no limit.
func WithMaxSize(n int64) Option { return func(o *options) { o.maxSize = n } }

// WithClock sets the clock that dates saved versions (time.Now unless
// set).
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}
