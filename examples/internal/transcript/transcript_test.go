package transcript

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func tool(id, text string) model.Message {
	return model.ToolMessage(id, "search", false, model.TextPart(text))
}

func TestToolResultsAreThoseSinceTheLastUserMessageInOrder(t *testing.T) {
	msgs := []model.Message{
		model.User("first"), model.Assistant("", model.ToolCall{ID: "a", Name: "search"}), tool("a", "old"),
		model.User("second"), model.Assistant("", model.ToolCall{ID: "b", Name: "search"}, model.ToolCall{ID: "c", Name: "search"}),
		tool("b", "one"), tool("c", "two"),
	}
	got := ToolResults(msgs)
	if assert.Len(t, got, 2) {
		assert.Equal(t, "one", got[0].Text())
		assert.Equal(t, "two", got[1].Text())
	}
	assert.Empty(t, ToolResults(msgs[:4]), "nothing answered since the user spoke")
	assert.Len(t, ToolResults(msgs[1:3]), 1, "no user message: every tool message counts")
}

func TestLastUserIsTheLatestUserText(t *testing.T) {
	msgs := []model.Message{model.User("first"), model.Assistant("ok"), model.User("second"), model.Assistant("ok")}
	assert.Equal(t, "second", LastUser(msgs))
	assert.Equal(t, "", LastUser(msgs[1:2]))
	assert.Equal(t, "", LastUser(nil))
}
