package runs

import "sync"

// hub wakes the goroutines of this process that wait on a run or thread
// (streams, Wait) when something happens to it: events recorded, a run
// ended, a cancellation asked for. A wake-up says only "look again"; what
// happened is read from the database.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[string]map[chan struct{}]struct{}{}} }

// eventsOf is the hub's ID for the events a run's recorder in this process
// writes: streams follow it, and Wait, which needs only the run's end (its
// own ID), is not woken by each batch.
func eventsOf(run string) string { return "e:" + run }

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
