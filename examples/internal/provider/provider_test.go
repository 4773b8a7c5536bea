package provider

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFromEnvPicksTheProviderWhoseKeyIsSet(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{nil, "scripted"},
		{map[string]string{"OPENAI_API_KEY": "k"}, "openai gpt-4o-mini"},
		{map[string]string{"OPENAI_API_KEY": "k", "OPENAI_MODEL": "llama3"}, "openai llama3"},
		{map[string]string{"ANTHROPIC_API_KEY": "k"}, "anthropic claude-sonnet-4-5"},
		{map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "openai gpt-4o-mini"},
	}
	for _, c := range cases {
		for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL"} {
			t.Setenv(k, c.env[k])
		}
		m, which, err := FromEnv()
		require.NoError(t, err)
		assert.Contains(t, which, c.want)
		assert.Equal(t, c.want == "scripted", m == nil)
	}
}
