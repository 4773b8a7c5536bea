package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

// Names and URLs the model gives are quoted in errors by a bounded prefix,
// never in full.
func TestBrokerErrorsQuoteABoundedPrefix(t *testing.T) {
	calc := serve(t, "calc", calcTools()...)
	host := calc[:len(calc)-len("/mcp/calc")]
	b, err := New(WithServers(mcp.Config{Name: "calc", URL: calc}), WithAllowedURLs(host+"/mcp/ok"))
	require.NoError(t, err)
	defer b.Close()

	huge := strings.Repeat("x", 100_000)
	tests := []struct {
		name, tool, args, code, want string
	}{
		{"server name", ListToolsTool, fmt.Sprintf(`{"server":%q}`, huge), CodeUnknownServer, `no server named "` + strings.Repeat("x", maxQuoted) + `…"`},
		{"URL", ListToolsTool, fmt.Sprintf(`{"server":%q}`, host+"/"+huge), CodeNotAllowed, "…\" matches no entry"},
		{"unparsable URL", ListToolsTool, `{"server":"http://h/` + huge + `\u007f"}`, CodeNotAllowed, "…\" is not a URL: net/url: invalid control character in URL"},
		{"tool name", CallToolTool, fmt.Sprintf(`{"server":"calc","tool":%q}`, huge), tool.CodeUnknownTool, `has no tool "` + strings.Repeat("x", maxQuoted) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, b, tt.tool, tt.args)
			require.True(t, r.IsError)
			assert.Equal(t, tt.code, r.ErrorCode, r.Text()[:min(len(r.Text()), 500)])
			assert.Contains(t, r.Text(), tt.want)
			assert.Less(t, len(r.Text()), 2000, "the error repeats the input")
			assert.Less(t, len(r.Err.Error()), 2000, "the error repeats the input")
		})
	}

	r := run(t, b, DescribeToolsTool, fmt.Sprintf(`{"server":"calc","tools":[%q]}`, huge))
	d := decode[ToolDescriptions](t, r)
	require.Len(t, d.Unknown, 1)
	assert.Equal(t, strings.Repeat("x", maxQuoted)+"…", d.Unknown[0].Name)
}
