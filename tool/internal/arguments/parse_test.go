package arguments

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdParse decodes like Parse promises to: encoding/json with UseNumber.
func stdParse(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if !json.Valid(raw) {
		return nil, errTrailingData
	}
	return v, nil
}

var parseCases = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+4`, `"x"`,
	` {"a" : [1, 2.0, {"b": null}], "c": "d"} `,
	`{"a":1,"a":2}`,
	`"esc: \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00"`,
	`"lone surrogate \ud800 here"`,
	`"reversed pair \udc00\ud800"`,
	"\"invalid utf8 \xff\xfe bytes\"",
	`"ünïcödé and 日本語"`,
	`[[[[[]]]]]`,
	`{"nested":{"deeper":{"deepest":[true,false,null]}}}`,
	`12345678901234567890123`,
	// invalid
	``, ` `, `{`, `[1,]`, `{"a":1,}`, `{a:1}`, `'x'`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `nul`,
	`"unterminated`, "\"ctrl \x01\"", `"bad \x escape"`, `"\u12"`, `{"a" 1}`, `[1 2]`, `{} {}`, `1 2`,
	`{"a":1}}`, `NaN`, `+1`,
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	for _, in := range parseCases {
		t.Run(in, func(t *testing.T) {
			want, wantErr := stdParse([]byte(in))
			got, err := Parse([]byte(in))
			if wantErr != nil {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	_, err := Parse([]byte(`{"a":1,}`))
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 7, se.Offset)
	assert.Contains(t, err.Error(), `invalid character '}'`)

	_, err = Parse([]byte(`{"a":1} x`))
	assert.ErrorContains(t, err, "unexpected data after the JSON value")

	_, err = Parse(nil)
	assert.ErrorIs(t, err, errEmptyJSON)

	deep := bytes.Repeat([]byte("["), maxParseDepth+1)
	_, err = Parse(deep)
	assert.ErrorContains(t, err, "nesting depth")
}

func FuzzParse(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, wantErr := stdParse(raw)
		got, err := Parse(raw)
		// skip, which the fast path uses, accepts exactly what Parse does.
		sp := parser{s: string(raw)}
		sp.space()
		skipErr := sp.skip(0)
		sp.space()
		if skipOK := len(raw) > 0 && skipErr == nil && sp.i == len(sp.s); skipOK != (err == nil) {
			t.Fatalf("skip accepts %q: %v, Parse: %v", raw, skipOK, err)
		}
		if wantErr != nil {
			if err == nil {
				t.Fatalf("Parse accepted %q, encoding/json: %v", raw, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("Parse rejected %q: %v", raw, err)
		}
		assert.Equal(t, want, got)
	})
}

// plainRunByByte is plainRun a byte at a time.
func plainRunByByte(s string, i int) int {
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	return i
}

func TestPlainRunStopsAtTheFirstByteThatIsNotPlain(t *testing.T) {
	// Every byte value at every position of strings of up to 20 bytes,
	// after plain bytes and after bytes that are not (which make the word
	// tests borrow), from every start.
	for n := 1; n <= 20; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				for _, fill := range []byte{'a', 0x01, 0xff, '"'} {
					b := bytes.Repeat([]byte{'a'}, n)
					for k := 0; k < pos; k += 3 {
						b[k] = fill
					}
					b[pos] = byte(c)
					s := string(b)
					for i := 0; i <= n; i++ {
						if got, want := plainRun(s, i), plainRunByByte(s, i); got != want {
							t.Fatalf("plainRun(%q, %d) = %d, want %d", s, i, got, want)
						}
					}
				}
			}
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	f.Add("text\":\"echo 0\"}", 0)
	f.Add("\x00\x1f\"\\\x7f\x80\xff abcdefgh", 3)
	f.Fuzz(func(t *testing.T, s string, i int) {
		if i < 0 || i > len(s) {
			return
		}
		if got, want := plainRun(s, i), plainRunByByte(s, i); got != want {
			t.Fatalf("plainRun(%q, %d) = %d, want %d", s, i, got, want)
		}
	})
}
