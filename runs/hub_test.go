package runs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func data(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i := range s {
		out[i] = []byte(s[i])
	}
	return out
}

func TestLiveLogServesCommittedEventsWhileTheRecorderIsOpen(t *testing.T) {
	h := newHub()
	_, ok := h.recent("r", 0, 10)
	require.False(t, ok, "a run not recorded here is read from the database")

	h.openLog("r", 3) // events 1 and 2 are from an earlier attempt
	got, ok := h.recent("r", 2, 10)
	require.True(t, ok)
	require.Empty(t, got, "nothing new yet")
	_, ok = h.recent("r", 0, 10)
	require.False(t, ok, "a stream further behind reads the database")

	wake, stop := h.subscribe(eventsOf("r"))
	defer stop()
	h.record("r", []int64{3, 4}, data("c", "d"))
	select {
	case <-wake:
	default:
		t.Fatal("recording events does not wake the run's streams")
	}
	got, ok = h.recent("r", 2, 10)
	require.True(t, ok)
	require.Equal(t, data("c", "d"), got)
	got, ok = h.recent("r", 3, 1)
	require.True(t, ok)
	require.Equal(t, data("d"), got)

	// A batch that did not commit leaves a gap: the log starts again.
	h.record("r", []int64{7}, data("g"))
	_, ok = h.recent("r", 4, 10)
	require.False(t, ok)
	got, ok = h.recent("r", 6, 10)
	require.True(t, ok)
	require.Equal(t, data("g"), got)

	h.closeLog("r")
	_, ok = h.recent("r", 6, 10)
	require.False(t, ok, "once the recorder closed, the run's end is read from the database")
}

func TestWaitersOfARunAreNotWokenByItsEvents(t *testing.T) {
	h := newHub()
	end, stopEnd := h.subscribe("r")
	defer stopEnd()
	stream, stopStream := h.subscribe("r", eventsOf("r"))
	defer stopStream()
	h.signal(eventsOf("r"))
	select {
	case <-end:
		t.Fatal("a waiter for the run's end was woken by its events")
	default:
	}
	select {
	case <-stream:
	default:
		t.Fatal("a stream was not woken by the run's events")
	}
	h.signal("r")
	select {
	case <-end:
	default:
		t.Fatal("a waiter was not woken by the run's end")
	}
}
