package handlers

import (
	"sync"
	"time"
)

// localFeed tells this process's subscribers that a session has new stored messages; they read
// the messages from the store. A ping carries no data, so a slow subscriber only misses
// redundant pings.
type localFeed struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

func newLocalFeed() *localFeed { return &localFeed{subs: map[string]map[chan struct{}]struct{}{}} }

// Subscribe returns a channel pinged when messages of the session are stored, and a cancel
// function that must be called when done.
func (f *localFeed) Subscribe(sessionID string) (<-chan struct{}, func()) {
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
func (f *localFeed) Publish(sessionID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[sessionID] {
		ping(ch)
	}
}

// SessionFeed pings subscribers of a session when messages of it are stored; the receiver's
// event streams subscribe to it (receiver.SessionFeed is the same contract).
type SessionFeed interface {
	Subscribe(sessionID string) (<-chan struct{}, func())
}

// busFeedPoll is how often, with a Bus, an event stream looks at the store for messages that
// another replica stored: this replica only hears of its own.
const busFeedPoll = time.Second

// SessionFeed is the pipeline's session feed: this process's pings alone on the in-process bus;
// with a Bus, those plus a ping every second, since messages stored by other replicas ping
// nothing here.
func (p *Pipeline) SessionFeed() SessionFeed {
	if p.bus == nil {
		return p.feed
	}
	return polledFeed{feed: p.feed, every: busFeedPoll}
}

type polledFeed struct {
	feed  *localFeed
	every time.Duration
}

func (f polledFeed) Subscribe(sessionID string) (<-chan struct{}, func()) {
	local, cancel := f.feed.Subscribe(sessionID)
	out := make(chan struct{}, 1)
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(f.every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-local:
			case <-t.C:
			}
			ping(out)
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			close(stop)
			cancel()
		})
	}
}
