// Package skill gives agents skills: packages of instructions, and files
// to go with them, that a model loads when a task calls for one instead of
// carrying them all in its system prompt.
//
//	repo, err := skill.Open("./skills")
//	...
//	defer repo.Close()
//	set, err := skill.Tools(repo) // skill_load, skill_read_file
//	...
//	a, err := agent.NewReAct(m, agent.WithToolsets(set))
//
// The system prompt then lists each skill by name and description (the
// toolset's instruction); the model calls skill_load with a name to get
// the skill's instructions and the list of its files, and skill_read_file
// to read one of them.
//
// # Skills
//
// A skill is a directory holding a file SKILL.md, which starts with a
// front matter block — a line "---", YAML, a line "---" — followed by the
// Markdown body, the instructions:
//
//	---
//	name: pdf-tools
//	description: Extract text and tables from PDF files. Use when the user gives a PDF.
//	---
//	# PDF tools
//
//	Run scripts/extract.py with the file's path ...
//
// The front matter needs a name — 1 to 64 lower-case letters and digits
// in groups joined by single hyphens, unique in the repository — and a
// description of at most 1024 characters, which is what the model decides
// by. "license", "compatibility", "allowed-tools" and "metadata" (strings
// to strings) are read into the Skill when present; other keys are
// ignored. A UTF-8 byte order mark and "\r\n" line endings are accepted.
// A SKILL.md may not exceed 256 KiB, nor its front matter 64 KiB. The
// name need not be the directory's. Parse reads one SKILL.md's content.
//
// The other files under the skill's directory are its resources
// (scripts, references, templates), listed by path and size; names that
// start with "." (".git", ".env") are not part of a skill, and only the
// first MaxFiles files are listed, though any can be read.
//
// # Repositories
//
// Open scans a directory: each subdirectory with a SKILL.md is a skill.
// WithMaxDepth lets skills sit deeper, grouped in plain directories
// ("office/pdf-tools/SKILL.md"); a skill's own directory is never searched
// for more skills. Directories without a SKILL.md are passed by, and so
// are links back to a directory the scan came through; a scan stops, with
// a problem, after looking at 20,000 files and directories. FromFS
// scans an fs.FS the same way, for skills compiled into the program with
// embed.FS.
//
// A Repository is a snapshot: the skills' SKILL.md and file lists as of
// Open or FromFS, or of the last Reload, which scans again and swaps the
// new skills in at once; tools running meanwhile see the old ones or the
// new ones. Resource files are read when a tool asks for them. Open keeps
// the directory open (an os.Root): Reload rescans that directory even
// after it is renamed. Close releases it.
//
// # Invalid skills
//
// A SKILL.md with no front matter, a missing or malformed name or
// description, or a name another skill took, and a link that leads out of
// the root where a skill could be, are invalid skills. By default one of
// them fails Open, FromFS and Reload with an error that names every bad
// skill's file (each an *InvalidSkillError, matching ErrInvalidSkill); a
// failed Reload keeps the skills there were. With WithSkipInvalid the scan
// keeps the valid skills and Problems reports the others; of two skills
// with one name, the first by path is kept.
//
// # Confinement
//
// Open reads through an os.Root opened on the root, and each skill's files
// through one opened on the skill's directory, so a symbolic link is
// followed only where it stays inside: a linked skill directory must lead
// to a directory inside the root, and a linked SKILL.md or resource file
// to a file inside the skill's own directory. A resource link that leads
// out is not listed, and skill_read_file refuses it, as it refuses an
// absolute path and one that climbs out with ".." (errors matching
// ErrOutside). FromFS follows no links at all, in a file system that has
// them (fs.ReadLinkFS).
//
// # Tools
//
// Tools returns the toolset. skill_load answers with a skill's body and
// its files; skill_read_file with a file's text, refusing files larger
// than WithMaxFileSize and binary ones. WithSkills limits the toolset to
// an allow-list of skills: the others are neither listed nor loadable.
// The instruction lists the offered skills, at most WithMaxListed of them;
// it is the instruction of skill_load (tool.InstructionProvider), which
// the agent adds to the system prompt, and it follows Reload. A call for a
// skill that does not exist is an error result that suggests the nearest
// names.
package skill
