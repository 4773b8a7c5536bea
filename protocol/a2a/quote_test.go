package a2a_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/protocol/a2a"
)

// The server's errors quote the IDs and names a client sends by a bounded
// prefix, never in full: a request with a huge ID gets a short answer.
func TestServerErrorsQuoteABoundedPrefix(t *testing.T) {
	_, hs := ownedServer(t, echoModel())
	huge := strings.Repeat("x", 100_000)
	prefix := `"` + strings.Repeat("x", 64) + `…"`
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"GetTask", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":%q}}`, huge), a2a.RPCTaskNotFound},
		{"CancelTask", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":%q}}`, huge), a2a.RPCTaskNotFound},
		{"SendMessage to a task", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","taskId":%q,"role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, huge), a2a.RPCTaskNotFound},
		{"a method", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{}}`, huge), a2a.RPCMethodNotFound},
		{"a page token", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":%q}}`, huge), a2a.RPCInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, resp := rpcAs(t, hs.URL, "alice", tc.body)
			code, msg := rpcError(t, resp)
			assert.Equal(t, tc.code, code, msg)
			assert.Less(t, len(msg), 500, "the error repeats the client's string in full: %.300s", msg)
			assert.Contains(t, msg, prefix)
		})
	}
}
