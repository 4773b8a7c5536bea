package graph

import (
	"fmt"
	"strings"
)

type mermaidWriter struct {
	b     strings.Builder
	depth int
	used  map[string]bool // the identifiers given out so far
}

func (w *mermaidWriter) line(format string, args ...any) {
	w.b.WriteString(strings.Repeat("\t", w.depth+1))
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// id returns a Mermaid-safe identifier for a node, one that no other node
// of the chart has: names that read alike once sanitized ("a-b", "a_b") get
// a numbered suffix, and so do names that are words of Mermaid's syntax.
func (w *mermaidWriter) id(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range name {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	id := base
	for n := 2; w.used[id] || mermaidKeywords[strings.ToLower(id)]; n++ {
		id = fmt.Sprintf("%s_%d", base, n)
	}
	w.reserve(id)
	return id
}

// reserve marks id as given out.
func (w *mermaidWriter) reserve(id string) {
	if w.used == nil {
		w.used = map[string]bool{}
	}
	w.used[id] = true
}

// mermaidKeywords are words a flowchart cannot use as node identifiers.
var mermaidKeywords = map[string]bool{
	"end": true, "subgraph": true, "graph": true, "flowchart": true, "direction": true,
	"style": true, "linkstyle": true, "classdef": true, "class": true, "click": true,
	"call": true, "href": true, "default": true,
}

func mermaidLabel(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(s)
}

// Mermaid returns a Mermaid flowchart of the graph: nodes, edges, conditional
// edges and fan-outs (dashed, labelled with their destinations), command
// destinations, joins, and subgraphs drawn inside their nodes.
func (g *Graph[S]) Mermaid() string {
	w := &mermaidWriter{}
	if g.name != "" {
		w.b.WriteString("---\ntitle: " + mermaidLabel(g.name) + "\n---\n")
	}
	w.b.WriteString("flowchart TD\n")
	g.writeMermaid(w, "")
	w.line("classDef first fill:#eee,stroke:#999")
	w.line("classDef last fill:#bfb6fc,stroke:#777")
	return w.b.String()
}

func (g *Graph[S]) writeMermaid(w *mermaidWriter, prefix string) {
	start, end := prefix+"__start__", prefix+"__end__"
	w.reserve(start)
	w.reserve(end)
	usesEnd := false
	w.line("%s([start]):::first", start)
	ids := make([]string, len(g.nodes))
	for i, n := range g.nodes {
		ids[i] = w.id(prefix, n.name)
	}
	for i, n := range g.nodes {
		label := n.name
		if n.spec.label != "" {
			label = n.spec.label
		}
		if n.spec.sub.mermaid != nil {
			w.line("subgraph %s [\"%s\"]", ids[i], mermaidLabel(label))
			w.depth++
			n.spec.sub.mermaid(w, ids[i]+"_")
			w.depth--
			w.line("end")
			continue
		}
		w.line("%s(\"%s\")", ids[i], mermaidLabel(label))
	}
	target := func(i int) string {
		if i < 0 {
			usesEnd = true
			return end
		}
		return ids[i]
	}
	writeRoutes := func(from string, rts []*route[S]) {
		for _, rt := range rts {
			label := ""
			if rt.fan != nil {
				label = "send "
			}
			for _, d := range rt.declare {
				if i, ok := rt.to[d]; ok {
					w.line("%s -.->|\"%s\"| %s", from, mermaidLabel(label+destLabel(d)), target(i))
				}
			}
		}
	}
	for _, i := range g.start {
		w.line("%s --> %s", start, ids[i])
	}
	if g.startEnd {
		w.line("%s --> %s", start, target(-1))
	}
	writeRoutes(start, g.startRts)
	for i, n := range g.nodes {
		out := len(n.edges) + len(n.routes) + len(n.cmdTo) + len(n.joins)
		for _, e := range n.edges {
			w.line("%s --> %s", ids[i], ids[e])
		}
		if n.toEnd && out > 0 {
			w.line("%s --> %s", ids[i], target(-1))
		}
		writeRoutes(ids[i], n.routes)
		for _, d := range n.spec.dests {
			if j, ok := n.cmdTo[d]; ok {
				w.line("%s -.->|\"goto %s\"| %s", ids[i], mermaidLabel(destLabel(d)), target(j))
			}
		}
		for _, j := range n.joins {
			w.line("%s ==>|join| %s", ids[i], ids[g.joins[j].to])
		}
		if out == 0 {
			w.line("%s --> %s", ids[i], target(-1))
		}
	}
	if usesEnd {
		w.line("%s([end]):::last", end)
	}
}

func destLabel(d string) string {
	if d == END {
		return "end"
	}
	return d
}
