package skill

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// utf8BOM is the byte order mark a SKILL.md may start with.
var utf8BOM = []byte("\xEF\xBB\xBF")

// Parse reads the content of a SKILL.md: a front matter block — a line
// "---", YAML, a line "---" — then the Markdown body. The front matter
// must be a mapping with a valid name and a description; "license",
// "compatibility", "allowed-tools" and "metadata" are read when present,
// and other keys are ignored. A UTF-8 byte order mark is skipped, and
// "\r\n" line endings read as "\n". The returned skill has no Dir and no
// Files. The error says what is wrong, without naming a file (the
// repository wraps it in an *InvalidSkillError that does).
func Parse(data []byte) (s Skill, err error) {
	if len(data) > MaxSkillFileSize {
		return Skill{}, fmt.Errorf("the file is %d bytes long, more than the %d a SKILL.md may have", len(data), MaxSkillFileSize)
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	if !utf8.Valid(data) {
		return Skill{}, errors.New("the file is not UTF-8 text")
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return Skill{}, errors.New("the file has a NUL byte; a SKILL.md is text")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")

	first, rest, _ := strings.Cut(text, "\n")
	if !isFence(first) {
		return Skill{}, errors.New("no front matter: a SKILL.md starts with a line \"---\", then YAML with name and description, then a line \"---\"")
	}
	var yamlText, body string
	closed := false
	for off := 0; off <= len(rest); {
		line, after, found := strings.Cut(rest[off:], "\n")
		if isFence(line) {
			yamlText, body, closed = rest[:off], after, true
			break
		}
		if !found {
			break
		}
		off += len(line) + 1
	}
	if !closed {
		return Skill{}, errors.New("the front matter is not closed: no line \"---\" follows the opening one")
	}
	if len(yamlText) > MaxFrontMatterSize {
		return Skill{}, fmt.Errorf("the front matter is %d bytes long, more than %d", len(yamlText), MaxFrontMatterSize)
	}
	if strings.TrimSpace(yamlText) == "" {
		return Skill{}, errors.New("the front matter is empty; it needs name and description")
	}
	if err := readFrontMatter(yamlText, &s); err != nil {
		return Skill{}, err
	}
	s.Body = trimBlankLines(body)
	return s, nil
}

// trimBlankLines removes the blank lines that start text and the white
// space that ends it, keeping the indentation of its first line.
func trimBlankLines(text string) string {
	for {
		line, rest, found := strings.Cut(text, "\n")
		if !found || strings.TrimSpace(line) != "" {
			break
		}
		text = rest
	}
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return strings.TrimRightFunc(text, unicode.IsSpace)
}

// isFence reports whether line is a front matter delimiter: "---",
// trailing spaces and tabs allowed.
func isFence(line string) bool { return strings.TrimRight(line, " \t") == "---" }

// readFrontMatter decodes the YAML of a front matter into s.
func readFrontMatter(text string, s *Skill) (err error) {
	var doc yaml.Node
	if err := unmarshal(text, &doc); err != nil {
		return fmt.Errorf("the front matter is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	top := &doc
	if top.Kind == yaml.DocumentNode && len(top.Content) == 1 {
		top = top.Content[0]
	}
	top = deref(top)
	if top == nil || top.Kind != yaml.MappingNode {
		return errors.New("the front matter is not a YAML mapping of keys to values, such as \"name: pdf-tools\"")
	}
	seen := map[string]bool{}
	var haveName, haveDescription bool
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := deref(top.Content[i]), deref(top.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode {
			continue // a complex key: nothing this package reads
		}
		key := k.Value
		if seen[key] {
			return fmt.Errorf("the front matter has the key %q twice", key)
		}
		seen[key] = true
		switch key {
		case "name":
			name, err := scalar(key, v)
			if err != nil {
				return err
			}
			if err := checkName(name); err != nil {
				return err
			}
			s.Name, haveName = name, true
		case "description":
			d, err := scalar(key, v)
			if err != nil {
				return err
			}
			d = strings.TrimSpace(d)
			if d == "" {
				return errors.New("the description is empty; say what the skill does and when to use it")
			}
			if n := utf8.RuneCountInString(d); n > MaxDescriptionLength {
				return fmt.Errorf("the description is %d characters long, more than %d", n, MaxDescriptionLength)
			}
			s.Description, haveDescription = d, true
		case "license":
			if s.License, err = optionalScalar(key, v); err != nil {
				return err
			}
		case "compatibility":
			if s.Compatibility, err = optionalScalar(key, v); err != nil {
				return err
			}
		case "allowed-tools":
			if s.AllowedTools, err = stringList(key, v); err != nil {
				return err
			}
		case "metadata":
			if s.Metadata, err = stringMap(key, v); err != nil {
				return err
			}
		}
	}
	switch {
	case !haveName:
		return errors.New("the front matter has no name")
	case !haveDescription:
		return errors.New("the front matter has no description")
	}
	return nil
}

// unmarshal decodes text into doc, turning a panic of the decoder into an
// error: the text may come from anyone.
func unmarshal(text string, doc *yaml.Node) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the decoder failed: %v", p)
		}
	}()
	return yaml.Unmarshal([]byte(text), doc)
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// isNull reports whether n is an empty or null value.
func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// scalar returns the text of a required scalar value.
func scalar(key string, n *yaml.Node) (string, error) {
	if isNull(n) {
		return "", fmt.Errorf("the %s is empty", key)
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("the %s is not a single value: write it as text, such as \"%s: ...\"", key, key)
	}
	return n.Value, nil
}

// optionalScalar returns the text of an optional scalar value, "" for
// none.
func optionalScalar(key string, n *yaml.Node) (string, error) {
	if isNull(n) {
		return "", nil
	}
	v, err := scalar(key, n)
	return strings.TrimSpace(v), err
}

// stringList reads a list of strings, given as a YAML sequence of scalars
// or as one string of words separated by white space.
func stringList(key string, n *yaml.Node) ([]string, error) {
	switch {
	case isNull(n):
		return nil, nil
	case n.Kind == yaml.ScalarNode:
		return strings.Fields(n.Value), nil
	case n.Kind == yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, e := range n.Content {
			e = deref(e)
			if e == nil || e.Kind != yaml.ScalarNode || isNull(e) {
				return nil, fmt.Errorf("%s: every entry must be a single value", key)
			}
			out = append(out, e.Value)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s is neither a list nor a string", key)
}

// stringMap reads a mapping of scalars to scalars.
func stringMap(key string, n *yaml.Node) (map[string]string, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s is not a mapping of keys to values", key)
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode || v == nil || v.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s: every key and value must be a single value", key)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("%s has the key %q twice", key, k.Value)
		}
		if isNull(v) {
			out[k.Value] = ""
			continue
		}
		out[k.Value] = v.Value
	}
	return out, nil
}
