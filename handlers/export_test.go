package handlers

// Crash makes a bus-mode pipeline behave like a killed process from now on: it acknowledges
// and publishes nothing more, so that Close leaves its notices with the broker, unacknowledged,
// for another replica to claim.
func (p *Pipeline) Crash() {
	if p.bus != nil {
		p.bus.crash()
	}
}
