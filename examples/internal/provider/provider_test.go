package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/examples/internal/fakeprovider"
	"github.com/trellis-go/trellis/model"
)

// The Gemini SDK's dependencies bring in OpenCensus, whose package init
// starts a worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestLookupPicksTheProviderTheEnvironmentNames(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing set", nil, "scripted"},
		{"blank key", map[string]string{EnvOpenAIKey: "  "}, "scripted"},
		{"openai", map[string]string{EnvOpenAIKey: "k"}, "openai gpt-4o-mini"},
		{"openai model", map[string]string{EnvOpenAIKey: "k", EnvOpenAIModel: "llama3.2"}, "openai llama3.2"},
		{"openai-compatible server without a key", map[string]string{EnvOpenAIBaseURL: "http://127.0.0.1:11434/v1"}, "openai gpt-4o-mini at http://127.0.0.1:11434/v1"},
		{"anthropic", map[string]string{EnvAnthropicKey: "k"}, "anthropic claude-haiku-4-5"},
		{"anthropic model", map[string]string{EnvAnthropicKey: "k", EnvAnthropicModel: "claude-sonnet-4-5"}, "anthropic claude-sonnet-4-5"},
		{"both keys: openai first", map[string]string{EnvAnthropicKey: "k", EnvOpenAIKey: "k"}, "openai gpt-4o-mini"},
		{"both keys, anthropic by name", map[string]string{EnvProvider: "Anthropic", EnvAnthropicKey: "k", EnvOpenAIKey: "k"}, "anthropic claude-haiku-4-5"},
		{"gemini", map[string]string{EnvGeminiKey: "k"}, "gemini gemini-2.5-flash"},
		{"gemini model", map[string]string{EnvGeminiKey: "k", EnvGeminiModel: "gemini-2.5-pro"}, "gemini gemini-2.5-pro"},
		{"gemini by name", map[string]string{EnvProvider: "gemini", EnvGeminiKey: "k", EnvOpenAIKey: "k"}, "gemini gemini-2.5-flash"},
		{"openai on the Responses API", map[string]string{EnvOpenAIKey: "k", EnvOpenAIAPI: "Responses"}, "openai gpt-4o-mini (Responses API)"},
		{"keys set, scripted by name", map[string]string{EnvProvider: "scripted", EnvOpenAIKey: "k"}, "scripted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, which, err := Lookup(envOf(c.env))
			require.NoError(t, err)
			assert.Contains(t, which, c.want)
			if c.want == "scripted" {
				assert.Nil(t, m)
				assert.Equal(t, Offline, which)
			} else {
				require.NotNil(t, m)
			}
		})
	}
}

func TestLookupRejectsBadValues(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unknown provider", map[string]string{EnvProvider: "mistral", EnvOpenAIKey: "k"}, `TRELLIS_PROVIDER="mistral": unknown provider; want openai, anthropic, gemini or scripted`},
		{"unknown OpenAI API", map[string]string{EnvOpenAIKey: "k", EnvOpenAIAPI: "assistants"}, `OPENAI_API="assistants": unknown API`},
		{"gemini by name, no key", map[string]string{EnvProvider: "gemini", EnvOpenAIKey: "k"}, "GEMINI_API_KEY is not set"},
		{"gemini base URL not absolute", map[string]string{EnvGeminiKey: "k", EnvGeminiBaseURL: "/v1"}, "GEMINI_BASE_URL: gemini:"},
		{"openai by name, no key", map[string]string{EnvProvider: "openai", EnvAnthropicKey: "k"}, "OPENAI_API_KEY is not set"},
		{"anthropic by name, blank key", map[string]string{EnvProvider: "anthropic", EnvAnthropicKey: " "}, "ANTHROPIC_API_KEY is not set"},
		{"openai base URL without a scheme", map[string]string{EnvOpenAIBaseURL: "localhost:11434/v1"}, `OPENAI_BASE_URL: openai: invalid base URL "localhost:11434/v1"`},
		{"anthropic base URL not absolute", map[string]string{EnvAnthropicKey: "k", EnvAnthropicBaseURL: "/v1"}, `ANTHROPIC_BASE_URL: anthropic: invalid base URL "/v1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _, err := Lookup(envOf(c.env))
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// ask sends one question to m and returns the answer's text.
func ask(t *testing.T, m model.Model) string {
	t.Helper()
	resp, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("hello")}})
	require.NoError(t, err)
	return resp.Message.Text()
}

func hello(fakeprovider.Request) fakeprovider.Reply { return fakeprovider.Reply{Text: "hi there"} }

func TestLookupReachesTheOpenAIServerItNames(t *testing.T) {
	srv := fakeprovider.OpenAI(t, hello)
	m, which, err := Lookup(envOf(map[string]string{EnvOpenAIKey: "sk-test", EnvOpenAIBaseURL: srv.URL, EnvOpenAIModel: "local-model"}))
	require.NoError(t, err)
	assert.Equal(t, "openai local-model at "+srv.URL, which)
	assert.Equal(t, "hi there", ask(t, m))
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "sk-test", reqs[0].Key)
	assert.Equal(t, "local-model", reqs[0].Model)
	assert.Equal(t, "hello", reqs[0].LastUser())
}

func TestLookupReachesAnOpenAICompatibleServerWithoutAKey(t *testing.T) {
	srv := fakeprovider.OpenAI(t, hello)
	m, _, err := Lookup(envOf(map[string]string{EnvOpenAIBaseURL: srv.URL}))
	require.NoError(t, err)
	assert.Equal(t, "hi there", ask(t, m))
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].Key, "no key is sent, not even one from the process's environment")
}

func TestLookupReachesTheAnthropicServerItNames(t *testing.T) {
	srv := fakeprovider.Anthropic(t, hello)
	m, which, err := Lookup(envOf(map[string]string{EnvAnthropicKey: "sk-ant-test", EnvAnthropicBaseURL: srv.URL}))
	require.NoError(t, err)
	assert.Equal(t, "anthropic claude-haiku-4-5 at "+srv.URL, which)
	assert.Equal(t, "hi there", ask(t, m))
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "sk-ant-test", reqs[0].Key)
	assert.Equal(t, "claude-haiku-4-5", reqs[0].Model)
}

// recording answers every request with body and records what it got.
func recording(t *testing.T, body string) (*httptest.Server, *[]*http.Request) {
	var (
		mu   sync.Mutex
		reqs []*http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, r.Clone(context.Background()))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &reqs
}

func TestLookupReachesTheGeminiServerItNames(t *testing.T) {
	srv, reqs := recording(t, `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi there"}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-flash"}`)
	m, which, err := Lookup(envOf(map[string]string{EnvProvider: "gemini", EnvGeminiKey: "g-test", EnvGeminiBaseURL: srv.URL}))
	require.NoError(t, err)
	assert.Equal(t, "gemini gemini-2.5-flash at "+srv.URL, which)
	assert.Equal(t, "hi there", ask(t, m))
	require.Len(t, *reqs, 1)
	assert.Equal(t, "g-test", (*reqs)[0].Header.Get("X-Goog-Api-Key"))
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", (*reqs)[0].URL.Path)
}

func TestLookupPutsOpenAIOnTheResponsesAPI(t *testing.T) {
	srv, reqs := recording(t, `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o-mini","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi there","annotations":[]}]}]}`)
	m, _, err := Lookup(envOf(map[string]string{EnvOpenAIKey: "sk-test", EnvOpenAIBaseURL: srv.URL, EnvOpenAIAPI: "responses"}))
	require.NoError(t, err)
	assert.Equal(t, "hi there", ask(t, m))
	require.Len(t, *reqs, 1)
	assert.Equal(t, "/responses", (*reqs)[0].URL.Path)
}

func TestFromEnvReadsTheProcessEnvironment(t *testing.T) {
	srv := fakeprovider.OpenAI(t, hello)
	for _, k := range []string{EnvProvider, EnvOpenAIModel, EnvOpenAIAPI, EnvGeminiKey, EnvGeminiBaseURL, EnvAnthropicKey, EnvAnthropicBaseURL, EnvAnthropicModel} {
		t.Setenv(k, "")
	}
	t.Setenv(EnvOpenAIKey, "sk-env")
	t.Setenv(EnvOpenAIBaseURL, srv.URL)
	m, _, err := FromEnv()
	require.NoError(t, err)
	assert.Equal(t, "hi there", ask(t, m))
	assert.Equal(t, "sk-env", srv.Requests()[0].Key)
}
