package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-go/trellis/tool/wasm"
)

// Table types and instructions.
const (
	funcref     = 0x70
	opI32Ne     = 0x47
	opRefNull   = 0xd0
	opPrefixFC  = 0xfc
	opTableGrow = 0x0f
	opTableSize = 0x10
)

// tableType is a funcref table type with a minimum and, unless max < 0,
// a maximum.
func tableType(min uint32, max int64) []byte {
	if max < 0 {
		return join([]byte{funcref, 0x00}, uleb(min))
	}
	return join([]byte{funcref, 0x01}, uleb(min), uleb(uint32(max)))
}

// tableModule returns a command module that imports proc_exit, defines
// the tables (table types, as tableType makes them) and one page of
// memory, and whose _start runs code.
func tableModule(code []byte, tables ...[]byte) []byte {
	before, after := tableModuleAround(code)
	return join(before, section(4, vec(tables...)), after)
}

// tableModuleAround returns the sections of tableModule before and after
// the table section.
func tableModuleAround(code []byte) (before, after []byte) {
	body := join([]byte{0x00}, code, []byte{opEnd})
	before = join(
		[]byte("\x00asm\x01\x00\x00\x00"),
		section(1, vec([]byte{0x60, 0x01, i32, 0x00}, []byte{0x60, 0x00, 0x00})),
		section(2, vec(join(name(procExit.module), name(procExit.name), []byte{0x00, 0x00}))),
		section(3, vec([]byte{0x01})),
	)
	after = join(
		section(5, vec([]byte{0x00, 0x01})),
		section(7, vec(join(name("_start"), []byte{0x00, 0x01}), join(name("memory"), []byte{0x02, 0x00}))),
		section(10, vec(join(uleb(uint32(len(body))), body))),
	)
	return before, after
}

// expectGrow is code that grows table 0 by delta and exits with code
// unless table.grow returns want.
func expectGrow(delta, want int32, code int32) []byte {
	return join(
		[]byte{opRefNull, funcref}, i32c(delta), []byte{opPrefixFC, opTableGrow, 0x00},
		i32c(want), []byte{opI32Ne, opIf, blockVoid}, i32c(code), call(0), []byte{opEnd},
	)
}

// tableGrowWasm grows a table that declares no maximum. Each step exits
// with its own code if table.grow does not return what the cap implies.
// The second step, a grow just past the cap (half a megabyte), guards the
// third: without the cap, the program exits there before it asks for two
// billion entries, which the host would allocate (16 GiB) and zero.
var tableGrowWasm = tableModule(join(
	expectGrow(99, 1, 11),                       // 1 -> 100 entries
	expectGrow(wasm.MaxTableEntries-99, -1, 12), // 65,537: one past the cap
	expectGrow(1<<31-1, -1, 13),                 // two billion
	expectGrow(wasm.MaxTableEntries-100, 100, 14),
	expectGrow(1, -1, 15),
	[]byte{opPrefixFC, opTableSize, 0x00}, i32c(wasm.MaxTableEntries), []byte{opI32Ne, opIf, blockVoid}, i32c(16), call(0), []byte{opEnd},
), tableType(1, -1))

func TestTableGrowStopsAtTheCap(t *testing.T) {
	// First the rewrite, so that the program runs only if it is in place.
	bounded, err := wasm.LimitTables(tableGrowWasm)
	if err != nil {
		t.Fatal(err)
	}
	limits, err := wasm.TableLimits(bounded)
	if err != nil || len(limits) != 1 || limits[0] != (wasm.TableLimit{Min: 1, Max: wasm.MaxTableEntries}) {
		t.Fatalf("the rewritten table: %v, %v; want [{1 %d}]", limits, err, wasm.MaxTableEntries)
	}
	for name, rt := range engines(t) {
		t.Run(name, func(t *testing.T) {
			mustSucceed(t, run(context.Background(), newTool(t, compile(t, rt, tableGrowWasm)), `{}`))
		})
	}
}

// TestGoProgramTableIsBounded checks the rewrite on the Go test program,
// whose function table declares no maximum (Go 1.26).
func TestGoProgramTableIsBounded(t *testing.T) {
	program(t)
	before, err := wasm.TableLimits(shared.bin)
	if err != nil || len(before) != 1 || before[0].Min == 0 {
		t.Fatalf("the Go program's tables: %v, %v; want one function table", before, err)
	}
	want := int64(wasm.MaxTableEntries)
	if before[0].Max >= 0 {
		want = min(want, before[0].Max)
	}
	want = max(want, int64(before[0].Min))
	after, err := wasm.LimitTables(shared.bin)
	if err != nil {
		t.Fatal(err)
	}
	if limits, err := wasm.TableLimits(after); err != nil || len(limits) != 1 || limits[0] != (wasm.TableLimit{Min: before[0].Min, Max: want}) {
		t.Errorf("the rewritten tables: %v, %v", limits, err)
	}
	checkTablesBounded(t, shared.bin)
}

func TestLimitTables(t *testing.T) {
	const capped = wasm.MaxTableEntries
	for _, tc := range []struct {
		name   string
		tables [][]byte
		want   []wasm.TableLimit
	}{
		{"no maximum", [][]byte{tableType(3, -1)}, []wasm.TableLimit{{3, capped}}},
		{"a smaller maximum is kept", [][]byte{tableType(3, 10)}, []wasm.TableLimit{{3, 10}}},
		{"a larger maximum is lowered", [][]byte{tableType(3, 1<<20)}, []wasm.TableLimit{{3, capped}}},
		{"a larger minimum is the size", [][]byte{tableType(capped+5, -1)}, []wasm.TableLimit{{capped + 5, capped + 5}}},
		{"a larger minimum and maximum", [][]byte{tableType(capped+5, 1<<24)}, []wasm.TableLimit{{capped + 5, capped + 5}}},
		{"an empty table", [][]byte{tableType(0, 0)}, []wasm.TableLimit{{0, 0}}},
		{"an initial value", [][]byte{join([]byte{0x40, 0x00}, tableType(2, -1), []byte{opRefNull, funcref, opEnd}), tableType(0, 7)},
			[]wasm.TableLimit{{2, capped}, {0, 7}}},
		{"the most unbounded tables", slicesRepeat(tableType(0, -1), wasm.MaxModuleTableEntries/capped), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := tableModule(nil, tc.tables...)
			out, err := wasm.LimitTables(bin)
			if err != nil {
				t.Fatal(err)
			}
			if err := wasm.Precheck(out); err != nil {
				t.Fatalf("the rewritten module fails precheck: %v", err)
			}
			got, err := wasm.TableLimits(out)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				tc.want = slicesRepeat(wasm.TableLimit{Min: 0, Max: capped}, len(tc.tables))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("limits %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("table %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
			// Only the table section changes.
			before, after := tableModuleAround(nil)
			if !bytes.HasPrefix(out, before) || !bytes.HasSuffix(out, after) {
				t.Error("sections other than the table section changed")
			}
		})
	}

	// A module without tables is unchanged.
	if out, err := wasm.LimitTables(echoWasm); err != nil || !bytes.Equal(out, echoWasm) {
		t.Errorf("a module without tables: %v, changed %v", err, !bytes.Equal(out, echoWasm))
	}
}

func slicesRepeat[T any](v T, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestCompileRefusesLargeTables(t *testing.T) {
	rt := engines(t)["interpreter"]
	tableImport := join(
		[]byte("\x00asm\x01\x00\x00\x00"),
		section(1, vec([]byte{0x60, 0x00, 0x00})),
		section(2, vec(join(name("env"), name("table"), []byte{0x01}, tableType(1, -1)))),
		section(3, vec([]byte{0x00})),
		section(7, vec(join(name("_start"), []byte{0x00, 0x00}))),
		section(10, vec([]byte{0x02, 0x00, opEnd})),
	)
	for _, tc := range []struct {
		name string
		bin  []byte
		want string
	}{
		{"minimums", tableModule(nil, tableType(wasm.MaxModuleTableEntries/2, -1), tableType(wasm.MaxModuleTableEntries/2+1, -1)),
			"tables declare 4194305 entries in all, more than the 4194304"},
		{"one large minimum", tableModule(nil, tableType(wasm.MaxModuleTableEntries+1, -1)), "declare 4194305 entries"},
		{"too many unbounded tables", tableModule(nil, slicesRepeat(tableType(0, -1), wasm.MaxModuleTableEntries/wasm.MaxTableEntries+1)...),
			"65 tables could grow to 4259840 entries in all"},
		{"shared limits", tableModule(nil, []byte{funcref, 0x03, 0x01, 0x02}), "limits 0x03"},
		{"a table import", tableImport, "imports the table env.table; the runtime provides no tables"},
		{"a global import", join(
			[]byte("\x00asm\x01\x00\x00\x00"),
			section(1, vec([]byte{0x60, 0x00, 0x00})),
			section(2, vec(join(name("env"), name("g"), []byte{0x03, 0x7f, 0x00}))),
			section(3, vec([]byte{0x00})),
			section(7, vec(join(name("_start"), []byte{0x00, 0x00}))),
			section(10, vec([]byte{0x02, 0x00, opEnd})),
		), "imports the global env.g; the runtime provides no globals"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod, err := rt.Compile(context.Background(), tc.bin)
			if mod != nil || !errors.Is(err, wasm.ErrInvalidModule) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile: %v, want an ErrInvalidModule that says %q", err, tc.want)
			}
		})
	}
	// At the cap, the module compiles.
	mod := compile(t, rt, tableModule(nil, slicesRepeat(tableType(0, -1), wasm.MaxModuleTableEntries/wasm.MaxTableEntries)...))
	mustSucceed(t, run(context.Background(), newTool(t, mod), `{}`))
}
