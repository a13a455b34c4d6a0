package handlers

import "sync"

// LiveFeed tells subscribers that a session has new stored messages; they read the messages
// from the store. A ping carries no data, so a slow subscriber only misses redundant pings.
type LiveFeed struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewLiveFeed returns an empty feed.
func NewLiveFeed() *LiveFeed { return &LiveFeed{subs: map[string]map[chan struct{}]struct{}{}} }

// Subscribe returns a channel pinged when messages of the session are stored, and a cancel
// function that must be called when done.
func (f *LiveFeed) Subscribe(sessionID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.subs[sessionID] == nil {
		f.subs[sessionID] = map[chan struct{}]struct{}{}
	}
	f.subs[sessionID][ch] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs[sessionID], ch)
			if len(f.subs[sessionID]) == 0 {
				delete(f.subs, sessionID)
			}
			f.mu.Unlock()
		})
	}
}

// Publish pings every subscriber of the session without blocking.
func (f *LiveFeed) Publish(sessionID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[sessionID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
