package nodes

import (
	"context"
	"errors"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/tool"
)

// AskUserName is the name of the tool AskUser returns.
const AskUserName = "ask_user"

// Question is the payload of the interrupt an ask_user call raises: what
// the model asks the user, and the call that asks it. Resume the thread with
// the user's answer, a string (graph.WithResumeValue, or graph.WithResume
// with the interrupt's ID when several are pending).
type Question struct {
	// Question is the model's question.
	Question string `json:"question"`
	// Choices are the answers the model suggests, if any.
	Choices []string `json:"choices,omitempty"`
	// CallID is the ID of the ask_user call.
	CallID string `json:"call_id"`
}

// askArgs are the arguments of ask_user.
type askArgs struct {
	Question string   `json:"question" jsonschema:"description=The question for the user,minLength=1"`
	Choices  []string `json:"choices,omitempty" jsonschema:"description=Answers to suggest to the user, if the question has a few likely ones"`
}

// AskUser returns a tool with which a model asks the user a question and
// waits for the answer: a call pauses the run with a graph interrupt whose
// payload is a Question, and the run resumed with the user's answer (a
// string) gives the model that answer as the call's result. The run needs a
// checkpointer, as every interrupt does. Under a supervisor or in a
// handoff's agent, the interrupt reaches the top-level run with the path of
// the agent that asked, and the answer goes back to that agent.
//
// The tool's description tells the model when to use it; opts (an
// instruction, metadata) add to or replace what it has. An empty answer is
// given to the model as "(no answer)".
func AskUser(opts ...tool.Option) tool.Tool {
	// Not ReadOnly: a cache would serve one user's answer to another's
	// question.
	base := []tool.Option{tool.WithMetadata(tool.Metadata{ConcurrencySafe: true})}
	return tool.MustFunc(AskUserName,
		"Asks the user a question and returns the answer. Use it when you need information or a decision only the user can give; do not use it for what you can find out yourself.",
		askUser, append(base, opts...)...)
}

func askUser(ctx context.Context, in askArgs) (string, error) {
	q := strings.TrimSpace(in.Question)
	if q == "" {
		return "", errors.New("the question is empty")
	}
	answer, err := graph.Interrupt[string](ctx, Question{Question: q, Choices: in.Choices, CallID: tool.CallID(ctx)})
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(answer) == "" {
		return "(no answer)", nil
	}
	return answer, nil
}
