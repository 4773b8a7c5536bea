package skill

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/trellis-go/trellis/internal/textcut"
)

// FileName is the name of the file that makes a directory a skill.
const FileName = "SKILL.md"

// Limits of a skill's SKILL.md.
const (
	// MaxNameLength is the longest a skill's name may be, in bytes.
	MaxNameLength = 64
	// MaxDescriptionLength is the longest a skill's description may be, in
	// characters (Unicode code points).
	MaxDescriptionLength = 1024
	// MaxSkillFileSize is the largest SKILL.md a repository reads, in bytes.
	MaxSkillFileSize = 256 << 10
	// MaxFrontMatterSize is the largest front matter block SKILL.md may
	// start with, in bytes.
	MaxFrontMatterSize = 64 << 10
	// MaxFiles is how many resource files of one skill are listed
	// (Skill.Files); a skill with more has Skill.MoreFiles set. The files
	// past the cap can still be read by path.
	MaxFiles = 200
)

// ErrInvalidSkill is matched (errors.Is) by the error of a skill that
// cannot be loaded: a SKILL.md without front matter, with a missing or
// malformed name or description, a name another skill has, a link that
// leads outside the repository. Such errors are *InvalidSkillError values.
var ErrInvalidSkill = errors.New("skill: invalid skill")

// ErrOutside is matched (errors.Is) by the error of a read whose path is
// absolute, climbs out of the skill's directory with "..", or leads out of
// it through a symbolic link.
var ErrOutside = errors.New("skill: path outside the skill's directory")

// ErrNotFound is matched (errors.Is) by the error of a request for a skill
// the repository (or the toolset's allow-list) does not have.
var ErrNotFound = errors.New("skill: no such skill")

// ErrClosed is matched (errors.Is) by the errors of a repository's
// methods and tools after Close.
var ErrClosed = errors.New("skill: the repository is closed")

// InvalidSkillError is the error of one skill that cannot be loaded. Path
// names the file (or directory) at fault: for a repository from Open, the
// path joined to the root as Open was given it; for one from FromFS, the
// path within the file system.
type InvalidSkillError struct {
	// Path is the file or directory at fault, such as "skills/pdf/SKILL.md".
	Path string
	// Err says what is wrong with it.
	Err error
}

// Error returns "skill: PATH: what is wrong".
func (e *InvalidSkillError) Error() string {
	return fmt.Sprintf("skill: %s: %v", e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *InvalidSkillError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidSkill.
func (e *InvalidSkillError) Is(target error) bool { return target == ErrInvalidSkill }

// outsideError is the error of a path that leaves a skill's directory.
type outsideError struct {
	path, why string
}

func (e *outsideError) Error() string {
	return fmt.Sprintf("path %q is outside the skill's directory: %s", e.path, e.why)
}

func (e *outsideError) Is(target error) bool { return target == ErrOutside }

// Skill is one skill of a repository: what its SKILL.md says, and the
// resource files beside it. The values a Repository returns are copies.
type Skill struct {
	// Name identifies the skill (front matter "name"): 1 to 64 lower-case
	// ASCII letters and digits in groups joined by single hyphens, such as
	// "pdf-tools".
	Name string
	// Description says what the skill does and when to use it (front
	// matter "description"), with surrounding white space removed.
	Description string
	// License is the front matter's "license", if any.
	License string
	// Compatibility is the front matter's "compatibility", if any: what the
	// skill needs of its environment.
	Compatibility string
	// AllowedTools is the front matter's "allowed-tools", if any (a list,
	// or a string of names separated by spaces). The package records it
	// and acts on nothing in it.
	AllowedTools []string
	// Metadata is the front matter's "metadata" mapping of strings to
	// strings, if any.
	Metadata map[string]string
	// Body is the Markdown that follows the front matter: the skill's
	// instructions, with line endings as "\n" and surrounding blank lines
	// removed.
	Body string
	// Dir is the skill's directory, slash-separated and relative to the
	// repository's root, such as "pdf-tools" or "office/pdf-tools".
	Dir string
	// Files are the skill's resource files, sorted by path: every regular
	// file under Dir except SKILL.md itself and what lies under a name that
	// starts with ".", at most MaxFiles of them.
	Files []File
	// MoreFiles says the skill has more resource files than Files lists.
	MoreFiles bool
}

// File is one resource file of a skill.
type File struct {
	// Path is the file's path, slash-separated and relative to the skill's
	// directory, such as "scripts/extract.py".
	Path string
	// Size is the file's size in bytes, as of the last scan.
	Size int64
}

// clone returns a deep copy of s.
func (s Skill) clone() Skill {
	s.AllowedTools = slices.Clone(s.AllowedTools)
	s.Metadata = maps.Clone(s.Metadata)
	s.Files = slices.Clone(s.Files)
	return s
}

// ValidName reports whether name is a valid skill name: 1 to
// MaxNameLength characters, lower-case ASCII letters and digits in groups
// joined by single hyphens (^[a-z0-9]+(-[a-z0-9]+)*$).
func ValidName(name string) bool { return checkName(name) == nil }

// checkName says what is wrong with a skill name, or returns nil.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the name is empty")
	case len(name) > MaxNameLength:
		return fmt.Errorf("name %q is %d characters long, more than %d", textcut.Clip(name, MaxNameLength, "..."), len(name), MaxNameLength)
	}
	prevHyphen := true // no hyphen may start the name
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			prevHyphen = false
		case c == '-' && !prevHyphen:
			prevHyphen = true
		default:
			return fmt.Errorf("name %q is invalid: use lower-case letters (a-z) and digits, in groups joined by single hyphens, such as \"pdf-tools\"", name)
		}
	}
	if prevHyphen {
		return fmt.Errorf("name %q is invalid: it ends with a hyphen", name)
	}
	return nil
}
