package integration

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/sqlite"
)

// encryptedAgent is an echoing agent over saver whose checkpoints ser seals.
func encryptedAgent(t *testing.T, saver state.Saver, ser state.Serializer) *graph.Graph[agent.State] {
	t.Helper()
	echo := reactive("echo", func(msgs []model.Message) model.Message {
		return model.Assistant("answer to " + lastUser(msgs))
	})
	g, err := agent.NewReAct(echo, agent.WithCheckpointer(saver), agent.WithCompileOptions(graph.WithSerializer(ser)))
	require.NoError(t, err)
	return g
}

// Someone with write access to a SQLite checkpoint file, but not the key,
// rewrites payloads in place: one user's conversation copied over
// another's, a conversation set back to an earlier turn. Each is refused
// when read, with an error matching state.ErrMisplaced; nothing decrypts
// into the wrong conversation.
func TestEncryptedSQLitePayloadsRewrittenInPlaceAreRefused(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "checkpoints.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	saver, err := sqlite.New(db)
	require.NoError(t, err)
	ser, err := state.EncryptedKeys([]state.Key{{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}}, state.JSON())
	require.NoError(t, err)
	g := encryptedAgent(t, saver, ser)
	for _, turn := range [][2]string{{"alice", "my card is 4111"}, {"bob", "hello"}, {"alice", "thanks"}} {
		_, err := agent.Continue(ctx, g, turn[0], turn[1])
		require.NoError(t, err)
	}
	latest := func(thread string) string {
		snap, err := g.GetState(ctx, thread)
		require.NoError(t, err)
		return snap.CheckpointID
	}
	copyPayload := func(fromThread, fromID, toThread, toID string) {
		t.Helper()
		res, err := db.ExecContext(ctx, `UPDATE trellis_checkpoints
			SET payload = (SELECT payload FROM trellis_checkpoints WHERE thread_id = ? AND id = ?)
			WHERE thread_id = ? AND id = ?`, fromThread, fromID, toThread, toID)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	}

	// Alice's conversation copied over Bob's latest checkpoint.
	copyPayload("alice", latest("alice"), "bob", latest("bob"))
	_, err = g.GetState(ctx, "bob")
	require.ErrorIs(t, err, state.ErrMisplaced)
	_, err = agent.Continue(ctx, g, "bob", "what is my card number?")
	require.ErrorIs(t, err, state.ErrMisplaced)
	require.ErrorIs(t, err, graph.ErrCorruptCheckpoint)

	// Alice's conversation set back to her first turn's end.
	hist, err := g.History(ctx, "alice", 0)
	require.NoError(t, err)
	var firstTurnEnd string
	for _, h := range hist {
		if len(h.State.Messages) == 2 && len(h.Next) == 0 {
			firstTurnEnd = h.CheckpointID
		}
	}
	require.NotEmpty(t, firstTurnEnd)
	copyPayload("alice", firstTurnEnd, "alice", latest("alice"))
	_, err = agent.Continue(ctx, g, "alice", "and again")
	require.ErrorIs(t, err, state.ErrMisplaced)
}

// Keys rotate under a running store: after the new key is put first,
// threads sealed under the old one go on, their new checkpoints sealed
// under the new key; once the old key is dropped, only what it sealed is
// refused, naming it.
func TestEncryptedCheckpointsKeyRotation(t *testing.T) {
	ctx := context.Background()
	saver := sqliteSaver(t)
	oldKey := state.Key{ID: "2025-01", Secret: []byte("0123456789abcdef")}
	newKey := state.Key{ID: "2025-07", Secret: []byte("fedcba9876543210fedcba9876543210")}
	withKeys := func(keys ...state.Key) *graph.Graph[agent.State] {
		ser, err := state.EncryptedKeys(keys, state.JSON())
		require.NoError(t, err)
		return encryptedAgent(t, saver, ser)
	}

	_, err := agent.Continue(ctx, withKeys(oldKey), "t", "before the rotation")
	require.NoError(t, err)
	rotated := withKeys(newKey, oldKey)
	out, err := agent.Continue(ctx, rotated, "t", "after the rotation")
	require.NoError(t, err)
	assert.Len(t, out.Messages, 4, "the turn read the thread sealed under the old key")

	newOnly := withKeys(newKey)
	snap, err := newOnly.GetState(ctx, "t")
	require.NoError(t, err, "the latest checkpoint is sealed under the new key")
	assert.Equal(t, out.Messages, snap.State.Messages)
	_, err = newOnly.History(ctx, "t", 0)
	require.ErrorIs(t, err, state.ErrDecrypt, "older checkpoints are sealed under the dropped key")
	assert.ErrorContains(t, err, `key "2025-01", which is not among the serializer's keys ("2025-07")`)
}
