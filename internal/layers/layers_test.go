package layers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// module is the path every package of the module starts with.
const module = "github.com/trellis-go/trellis"

// layers is docs/architecture.md's drawing, from the bottom up: a package
// may import packages of its own layer and of the layers below it, never of
// one above. A pattern "x/..." stands for x and every package under it; a
// pattern without "/..." for that package only. The most specific pattern
// that matches a package places it (the longest, a package of its own name
// before a tree of the same name).
var layers = []struct {
	name     string
	patterns []string
}{
	{"internal helpers", []string{"internal/..."}},
	// store, the long-term store, imports nothing of the module above it.
	{"state", []string{"state/...", "store/..."}},
	{"graph", []string{"graph/..."}},
	// internal/runctx, the call context, speaks model's messages.
	// internal/chatspan, the chat spans the LLM node and model middleware
	// share, speaks model's vocabulary too.
	{"model", []string{"model/...", "internal/runctx", "internal/chatspan"}},
	// tool's argument pipeline, the call context and its frames, and the
	// batch storage and call scope the executors and the ToolsNode share,
	// belong with tool.
	{"tool", []string{"tool", "tool/internal/...", "internal/callctx", "internal/callroom", "internal/callscope"}},
	{"executor", []string{"executor/..."}},
	// internal/testutil/mwtest, the helpers of middleware's tests, is
	// made of middleware.
	{"middleware", []string{"middleware/...", "internal/testutil/mwtest"}},
	// internal/bgtask, the background tasks of tool/shell and tool/docker,
	// is made of tools.
	{"tools", []string{"tool/...", "internal/bgtask"}},
	{"nodes", []string{"nodes/..."}},
	{"agent", []string{"agent/..."}},
	{"runs", []string{"runs/..."}},
	// protocol/a2a serves tasks as runs (WithRuns).
	{"protocol", []string{"protocol/..."}},
	{"server", []string{"server/..."}},
	// internal/integration tests the layers together.
	{"examples", []string{"examples/...", "internal/integration/..."}},
}

// exceptions are imports that go up the layers and are allowed for now,
// keyed "importer -> imported" (paths inside the module). Each says why
// and when it goes; an exception no longer needed fails the test, so the
// table stays short.
var exceptions = map[string]string{}

// goPackage is the part of go list's JSON this test reads.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// TestImportsGoOnlyDownTheLayers lists the module's packages (tests aside:
// the rule holds for what a program compiles) and names every import of one
// package of the module by another that goes up the layers.
func TestImportsGoOnlyDownTheLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("go list over the whole module takes seconds; run without -short")
	}
	pkgs := listPackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s; expected the whole module", len(pkgs), module)
	}
	used := map[string]bool{}
	for _, p := range pkgs {
		from, ok := inModule(p.ImportPath)
		if !ok {
			continue
		}
		fromRank, ok := rankOf(from)
		if !ok {
			t.Errorf("package %s is in no layer: place it in the table of layers_test.go and in docs/architecture.md", from)
			continue
		}
		for _, imp := range p.Imports {
			to, ok := inModule(imp)
			if !ok {
				continue
			}
			toRank, ok := rankOf(to)
			if !ok || toRank <= fromRank {
				continue // a package in no layer is reported as an importer
			}
			key := from + " -> " + to
			if _, ok := exceptions[key]; ok {
				used[key] = true
				continue
			}
			t.Errorf("%s (layer %s) imports %s (layer %s), which is above it in docs/architecture.md",
				from, layers[fromRank].name, to, layers[toRank].name)
		}
	}
	for key, why := range exceptions {
		if !used[key] {
			t.Errorf("exception %q (%s) is no longer needed: delete it from layers_test.go", key, why)
		}
	}
}

// TestEveryPackageFindsItsLayer pins how patterns place packages, the
// rule the layering test rests on.
func TestEveryPackageFindsItsLayer(t *testing.T) {
	for pkg, want := range map[string]string{
		"tool":                  "tool",
		"tool/shell":            "tools",
		"tool/wasm":             "tools",
		"toolbox":               "",
		"model/openai":          "model",
		"internal/runctx":       "model",
		"internal/callctx":      "tool",
		"internal/textcut":      "internal helpers",
		"internal/integration":  "examples",
		"protocol/mcp/broker":   "protocol",
		"state/postgres":        "state",
		"runs/runstest":         "runs",
		"examples/internal/abc": "examples",
	} {
		rank, ok := rankOf(pkg)
		got := ""
		if ok {
			got = layers[rank].name
		}
		if got != want {
			t.Errorf("%s is placed in layer %q, want %q", pkg, got, want)
		}
	}
}

// inModule returns the path of pkg inside the module, and whether pkg
// belongs to the module (which has no package at its root).
func inModule(pkg string) (string, bool) {
	rest, ok := strings.CutPrefix(pkg, module+"/")
	return rest, ok
}

// rankOf returns the index in layers of the layer the most specific
// matching pattern places pkg in.
func rankOf(pkg string) (int, bool) {
	best, bestLen, found := 0, -1, false
	for rank, l := range layers {
		for _, pat := range l.patterns {
			n, ok := match(pat, pkg)
			if ok && n > bestLen {
				best, bestLen, found = rank, n, true
			}
		}
	}
	return best, found
}

// match reports whether pattern matches pkg and how specific the match is:
// the length of the pattern's path, plus one for an exact package so that
// it wins over a tree of the same name.
func match(pattern, pkg string) (int, bool) {
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		if pkg == tree || strings.HasPrefix(pkg, tree+"/") {
			return 2 * len(tree), true
		}
		return 0, false
	}
	if pkg == pattern {
		return 2*len(pattern) + 1, true
	}
	return 0, false
}

// listPackages runs go list over the module from its root and decodes the
// packages it prints.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the go command is needed to list packages: %v", err)
		}
		t.Skipf("the go command is not on PATH (%v); skipping the layering check", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found two folders up: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... failed: %v\n%s", err, stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b goPackage) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return pkgs
}
