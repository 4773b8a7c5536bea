package tool

import "unsafe"

// profile is what Invoke needs to know about a tool before it runs a call:
// the answers of the optional interfaces the tool implements, looked up
// through its renames. The tools of this package find theirs once, when
// they are built (see core.bind); for other tools Invoke finds it on every
// call, since nothing says their answers stay the same.
type profile struct {
	// owner is the tool the profile was made for. A profile is used only
	// for its owner, never for a type that embeds it and may override its
	// methods.
	owner     Tool
	declOnly  bool
	meta      Metadata
	schema    *Schema
	schemaErr error
	prepare   prepareFunc
	// checker is the tool's own permission checker, nil when it has none.
	checker PermissionChecker

	// How the tool is called: at most one of ps and pc is set (a parsed
	// streamer wins), fs or fc when its fast path checks schema, and st
	// for a tool outside this package that streams.
	ps parsedStreamer
	pc parsedCaller
	fs fastStreamer
	fc fastCaller
	st Streamer
	// tc is fc when the tool's output is a string: its calls return the
	// text, and run builds the result where it goes.
	tc textCaller

	// onePart says the tool's results are one part (see resultsOnePart);
	// set for the tools of this package, whose answer never changes.
	onePart bool
}

// profiled is implemented by the tools of this package, which keep the
// profile they were built with.
type profiled interface {
	toolProfile() *profile
}

// profileOf fills p with t's profile, asking t; iv compiles the schemas of
// tools that do not carry their own.
func (iv *Invoker) profileOf(t Tool, p *profile) {
	p.owner = t
	p.meta = askMetadata(t)
	p.checker, _ = As[PermissionChecker](t)
	if askDeclarationOnly(t) {
		p.declOnly = true
		return
	}
	p.schema, p.schemaErr = iv.schemaOf(t)
	p.prepare = preparerOf(t)
	if ps, ok := parsedStreamerOf(t); ok {
		p.ps = ps
		if fs, ok := ps.(fastStreamer); ok && fs.fastSchema() == p.schema {
			p.fs = fs
		}
		return
	}
	if pc, ok := parsedCallerOf(t); ok {
		p.pc = pc
		if fc, ok := pc.(fastCaller); ok && fc.fastSchema() == p.schema {
			p.fc = fc
			if tc, ok := fc.(textCaller); ok && tc.textOut() {
				p.tc = tc
			}
		}
		return
	}
	if st, ok := t.(Streamer); ok {
		p.st = st
	}
}

// ownProfile returns the profile t was built with, or nil when t is not a
// tool of this package (or a type that embeds one).
func ownProfile(t Tool) *profile {
	if pt, ok := t.(profiled); ok {
		if p := pt.toolProfile(); p != nil && sameWords(p.owner, t) {
			return p
		}
	}
	return nil
}

// sameWords reports whether a and b hold the same dynamic type and data
// word. For the pointer types of this package's tools that is a == b,
// without the runtime's general comparison; for other types it may say
// false where a == b, never true where a != b.
func sameWords(a, b Tool) bool {
	// Word by word: the arrays compared whole go through memequal.
	wa, wb := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return wa[0] == wb[0] && wa[1] == wb[1]
}
