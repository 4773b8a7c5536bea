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

// subscribe returns a channel that receives a value (dropped when one is
// already waiting) each time id is signalled, and a function that ends
// the subscription.
func (h *hub) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	set := h.subs[id]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.subs[id] = set
	}
	set[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(set, ch)
		if len(set) == 0 && h.subs[id] != nil && len(h.subs[id]) == 0 {
			delete(h.subs, id)
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
