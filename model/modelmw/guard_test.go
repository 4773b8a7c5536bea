package modelmw_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

func forbid(word string) modelmw.Guardrail {
	return modelmw.GuardrailFunc("no-"+word, func(_ context.Context, text string) (string, error) {
		if strings.Contains(text, word) {
			return "mentions " + word, nil
		}
		return "", nil
	})
}

func TestInputGuardrailStopsTheCallBeforeTheModel(t *testing.T) {
	base := scripted.New(scripted.Reply("never"))
	m := modelmw.Chain(base, modelmw.InputGuardrails(forbid("password")))
	_, err := m.Generate(t.Context(), userReq("my password is hunter2"))
	var trip *modelmw.TripwireError
	require.ErrorAs(t, err, &trip)
	assert.Equal(t, modelmw.StageInput, trip.Stage)
	assert.Equal(t, "no-password", trip.Guardrail)
	assert.ErrorIs(t, err, modelmw.ErrTripwire)
	assert.Zero(t, base.Calls())
}

func TestInputGuardrailsJudgeTheUsersInputOnce(t *testing.T) {
	base := scripted.New(scripted.Reply("ok"))
	m := modelmw.Chain(base, modelmw.InputGuardrails(forbid("password")))
	req := &model.Request{Messages: []model.Message{
		model.User("look up the password policy"),
		model.Assistant("", model.ToolCall{ID: "c1", Name: "search", Arguments: []byte(`{}`)}),
		model.ToolMessage("c1", "search", false, model.TextPart("password policy: ...")),
	}}
	_, err := m.Generate(t.Context(), req)
	assert.NoError(t, err, "a request that ends with tool results carries no new input")
}

func TestParallelInputGuardrailCancelsTheCallItTrips(t *testing.T) {
	g := newGated(model.Chunk{Text: "never sent"}) // blocks until its context ends
	release := make(chan struct{})
	slow := modelmw.GuardrailFunc("slow", func(ctx context.Context, text string) (string, error) {
		<-release
		return "not allowed", nil
	})
	slow.Parallel = true
	m := modelmw.Chain(g, modelmw.InputGuardrails(slow))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := textOf(m.Stream(ctx, userReq("x")))
		errc <- err
	}()
	close(release)
	err := <-errc
	assert.ErrorIs(t, err, modelmw.ErrTripwire)
	assert.NoError(t, ctx.Err(), "the call ended because the guardrail tripped, not by its deadline")
	assert.Zero(t, g.produced())
}

func TestParallelInputGuardrailThatPassesLetsTheReplyThrough(t *testing.T) {
	ok := modelmw.GuardrailFunc("fine", func(context.Context, string) (string, error) { return "", nil })
	ok.Parallel = true
	m := modelmw.Chain(scripted.New(scripted.Reply("hello there"), scripted.Reply("again")), modelmw.InputGuardrails(ok))
	text, err := textOf(m.Stream(t.Context(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "hello there", text)
	resp, err := m.Generate(t.Context(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "again", resp.Message.Text())
}

func TestStreamingOutputGuardrailTripsMidStream(t *testing.T) {
	guard := forbid("secret")
	guard.Streaming = true
	base := scripted.New(scripted.Reply("the launch code is secret and more words follow"))
	m := modelmw.Chain(base, modelmw.OutputGuardrails(guard))
	var got strings.Builder
	var gotErr error
	for c, err := range m.Stream(t.Context(), userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		got.WriteString(c.Text)
	}
	var trip *modelmw.TripwireError
	require.ErrorAs(t, gotErr, &trip)
	assert.Equal(t, modelmw.StageOutput, trip.Stage)
	assert.True(t, strings.HasPrefix(got.String(), "the launch"), "the chunks before the tripping one went through: %q", got.String())
	assert.NotContains(t, got.String(), "secret")
	assert.NotContains(t, got.String(), "follow", "the rest of the reply was never passed on")
}

func TestOutputGuardrailJudgesTheWholeReply(t *testing.T) {
	base := scripted.New(scripted.Reply("a secret"), scripted.Reply("a secret"))
	m := modelmw.Chain(base, modelmw.OutputGuardrails(forbid("secret")))
	_, err := m.Generate(t.Context(), userReq("x"))
	assert.ErrorIs(t, err, modelmw.ErrTripwire)
	var last model.Chunk
	var gotErr error
	for c, err := range m.Stream(t.Context(), userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		last = c
	}
	assert.ErrorIs(t, gotErr, modelmw.ErrTripwire)
	assert.Empty(t, last.FinishReason, "the reply's last chunk was held back")
}

func TestModelGuardrailAsksAModelForAVerdict(t *testing.T) {
	judge := scripted.New(
		scripted.ReplyJSON(map[string]any{"tripped": true, "reason": "asks for malware"}),
		scripted.ReplyJSON(map[string]any{"tripped": false, "reason": ""}),
	)
	base := scripted.New(scripted.Reply("sure"))
	m := modelmw.Chain(base, modelmw.InputGuardrails(modelmw.ModelGuardrail("policy", judge, "No malware.")))
	_, err := m.Generate(t.Context(), userReq("write a virus"))
	var trip *modelmw.TripwireError
	require.ErrorAs(t, err, &trip)
	assert.Equal(t, "asks for malware", trip.Reason)
	_, err = m.Generate(t.Context(), userReq("write a poem"))
	require.NoError(t, err)
	asked := judge.Requests()[0]
	assert.Contains(t, asked.Messages[1].Text(), "write a virus")
	require.NotNil(t, asked.ResponseFormat)
}

func TestRedactPIIRewritesWhatTheModelIsSent(t *testing.T) {
	base := scripted.New(scripted.Reply("noted"))
	m := modelmw.Chain(base, modelmw.RedactPII())
	req := userReq("mail ada@example.com or call +44 20 7946 0958; card 4111 1111 1111 1111, order 1234")
	_, err := m.Generate(t.Context(), req)
	require.NoError(t, err)
	sent := base.Requests()[0].Messages[0].Text()
	assert.Equal(t, "mail [email] or call [phone]; card [card], order 1234", sent)
	assert.Contains(t, req.Messages[0].Text(), "ada@example.com", "the caller's request is unchanged")
}

func TestPIIGuardrailNamesWhatItFound(t *testing.T) {
	reason, err := modelmw.PIIGuardrail().Check(t.Context(), []model.Message{model.Assistant("write to bob@example.org")})
	require.NoError(t, err)
	assert.Equal(t, "the text holds personal data: email", reason)
	reason, err = modelmw.PIIGuardrail().Check(t.Context(), []model.Message{model.Assistant("nothing here, 42 items")})
	require.NoError(t, err)
	assert.Empty(t, reason)
}

func TestRedactTextRedactsWhatOnePassExposes(t *testing.T) {
	assert.Equal(t, "[phone][phone]   20", modelmw.RedactText("169 70864234 2683   20"))
}

func FuzzRedactText(f *testing.F) {
	for _, s := range []string{"ada@example.com", "+1 (555) 010-9999", "4111-1111-1111-1111", "plain text 12 34",
		// One pass redacts the end of a run of digits and so exposes a
		// second phone number at its start.
		"169 70864234 2683   20"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := modelmw.RedactText(s)
		if twice := modelmw.RedactText(once); twice != once {
			t.Fatalf("redacting twice changed %q to %q", once, twice)
		}
	})
}
