package handlers

// Crash makes a bus-mode pipeline behave like a killed process from now on: it acknowledges
// and publishes nothing more, so that Close leaves its notices with the broker, unacknowledged,
// for another replica to claim.
func (p *Pipeline) Crash() {
	if p.bus != nil {
		p.bus.crash()
	}
}

// NewLocalFeed and LocalFeed let the tests reach the in-process session feed.
func NewLocalFeed() SessionFeed { return newLocalFeed() }

func (p *Pipeline) LocalFeed() SessionFeed { return p.feed }

// Publish pings a local feed's subscribers of sessionID.
func Publish(f SessionFeed, sessionID string) { f.(*localFeed).Publish(sessionID) }
