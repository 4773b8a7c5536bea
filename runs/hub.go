package runs

import (
	"strings"
	"sync"
)

// hub wakes the goroutines of this process that wait on a run or thread
// (streams, Wait) when something happens to it: events recorded, a run
// ended, a cancellation asked for. A wake-up says only "look again"; what
// happened is read from the database.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// live holds, for each run whose recorder is open in this process,
	// the encoded events it has committed, so that the streams of this
	// process read them here rather than from the database.
	live map[string]*liveLog
}

// liveLog is the committed events of a run's attempt, consecutive from
// the one numbered first.
type liveLog struct {
	first int64
	data  [][]byte
}

// liveLogMax bounds a live log: past it, the older half is dropped (and
// read from the database by the streams that are that far behind).
const liveLogMax = 4096

func newHub() *hub {
	return &hub{subs: map[string]map[chan struct{}]struct{}{}, live: map[string]*liveLog{}}
}

// openLog starts keeping the events of run numbered from first.
func (h *hub) openLog(run string, first int64) {
	h.mu.Lock()
	h.live[run] = &liveLog{first: first}
	h.mu.Unlock()
}

// closeLog stops keeping the events of run: its recorder has closed.
func (h *hub) closeLog(run string) {
	h.mu.Lock()
	delete(h.live, run)
	h.mu.Unlock()
}

// record adds the events of a batch that committed to run's log, and
// wakes its streams.
func (h *hub) record(run string, seqs []int64, datas [][]byte) {
	h.mu.Lock()
	if l := h.live[run]; l != nil && len(seqs) > 0 {
		if seqs[0] != l.first+int64(len(l.data)) {
			// A batch failed to commit before: the log starts again here.
			l.first, l.data = seqs[0], nil
		}
		l.data = append(l.data, datas...)
		if len(l.data) > liveLogMax {
			n := len(l.data) / 2
			l.first += int64(n)
			l.data = append([][]byte(nil), l.data[n:]...)
		}
	}
	h.mu.Unlock()
	h.signal(eventsOf(run))
}

// recent returns up to limit encoded events of run after the one numbered
// after, from its live log. ok is false when the log does not hold the
// next event (there is none, or it starts later): the database has them.
// With ok, the run's recorder is open: it has not ended.
func (h *hub) recent(run string, after int64, limit int) (datas [][]byte, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.live[run]
	if l == nil || after+1 < l.first {
		return nil, false
	}
	i := int(after + 1 - l.first)
	if i >= len(l.data) {
		return nil, true
	}
	end := min(len(l.data), i+limit)
	return l.data[i:end:end], true
}

// eventsOf is the hub's ID for the events a run's recorder in this process
// writes: streams follow it, and Wait, which needs only the run's end (its
// own ID), is not woken by each batch.
func eventsOf(run string) string { return "e:" + run }

// followOf is the hub's ID a run's recorder in this process follows: it is
// signalled when something begins to follow the run's events.
func followOf(run string) string { return "f:" + run }

// subscribe returns a channel that receives a value (dropped when one is
// already waiting) each time one of ids is signalled, and a function that
// ends the subscription.
func (h *hub) subscribe(ids ...string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	for _, id := range ids {
		set := h.subs[id]
		if set == nil {
			set = map[chan struct{}]struct{}{}
			h.subs[id] = set
		}
		set[ch] = struct{}{}
	}
	h.mu.Unlock()
	for _, id := range ids {
		if run, ok := strings.CutPrefix(id, "e:"); ok {
			h.signal(followOf(run)) // the run's recorder writes what it holds
		}
	}
	return ch, func() {
		h.mu.Lock()
		for _, id := range ids {
			if set := h.subs[id]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(h.subs, id)
				}
			}
		}
		h.mu.Unlock()
	}
}

// followed reports whether anything in this process subscribes to id.
func (h *hub) followed(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs[id]) > 0
}

// signal wakes the subscribers of id.
func (h *hub) signal(id string) {
	h.mu.Lock()
	for ch := range h.subs[id] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
}

// signalAll wakes every subscriber.
func (h *hub) signalAll() {
	h.mu.Lock()
	for _, set := range h.subs {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	h.mu.Unlock()
}
