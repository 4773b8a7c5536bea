package runs

import (
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLocalQueueHidesJobsUntilTheirTransactionCommits(t *testing.T) {
	q := NewLocalQueue()
	l := q.queue()
	committed, rolledBack := new(sql.Tx), new(sql.Tx)
	now := time.Now()
	a, err := l.insert(t.Context(), committed, runJob{Run: "a"}, now)
	require.NoError(t, err)
	_, err = l.insert(t.Context(), rolledBack, runJob{Run: "b"}, now)
	require.NoError(t, err)

	j, _, changed := q.take(now)
	require.Nil(t, j, "nothing is queued before a commit")
	q.settle(rolledBack, false)
	q.settle(committed, true)
	select {
	case <-changed:
	default:
		t.Fatal("a commit that queued a job does not wake the workers")
	}
	j, _, _ = q.take(now)
	require.NotNil(t, j)
	require.Equal(t, a, j.id)
	require.Equal(t, "a", j.job.Run)
	j, _, _ = q.take(now)
	require.Nil(t, j, "the job of the rolled-back transaction is never queued")
}

func TestLocalQueueHandsOutJobsWhenDueInOrder(t *testing.T) {
	q := NewLocalQueue()
	l := q.queue()
	tx := new(sql.Tx)
	now := time.Now()
	_, err := l.insert(t.Context(), tx, runJob{Run: "later"}, now.Add(time.Minute))
	require.NoError(t, err)
	_, err = l.insert(t.Context(), tx, runJob{Run: "first"}, now)
	require.NoError(t, err)
	_, err = l.insert(t.Context(), tx, runJob{Run: "second"}, now)
	require.NoError(t, err)
	q.settle(tx, true)

	var got []string
	for {
		j, wait, _ := q.take(now)
		if j == nil {
			require.InDelta(t, time.Minute, wait, float64(time.Second), "the next job is due in a minute")
			break
		}
		got = append(got, j.job.Run)
	}
	require.Equal(t, []string{"first", "second"}, got)
	j, _, _ := q.take(now.Add(time.Minute))
	require.NotNil(t, j)
	require.Equal(t, "later", j.job.Run)
}

func TestLocalQueueCancelDropsAQueuedJob(t *testing.T) {
	q := NewLocalQueue()
	l := q.queue()
	tx := new(sql.Tx)
	now := time.Now()
	id, err := l.insert(t.Context(), tx, runJob{Run: "a"}, now)
	require.NoError(t, err)
	q.settle(tx, true)
	require.NoError(t, l.cancel(t.Context(), new(sql.Tx), id))
	j, _, _ := q.take(now)
	require.Nil(t, j)
	require.NoError(t, l.cancel(t.Context(), new(sql.Tx), id), "cancelling a job no longer queued is no error")
}
