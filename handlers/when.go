package handlers

import (
	"context"

	"github.com/scribehook/scribehook/sinks"
)

// takes reports whether spec's filter takes the view's event. A when expression that fails
// over the event (a field it lacks, a value of another type, the cost limit) does not take it:
// counted in scribehook_sink_when_errors_total, and logged once per sink and process, since
// the same expression fails over every event of the same shape.
func (p *Pipeline) takes(ctx context.Context, spec sinks.Spec, v *sinks.EventView) bool {
	ok, err := spec.Filter.Check(ctx, v)
	if err != nil {
		p.m.whenErrors.WithLabelValues(spec.Name).Inc()
		if _, logged := p.whenLogged.LoadOrStore(spec.Name, true); !logged {
			p.log.WithError(err).WithFields(map[string]any{"sink": spec.Name, "event_id": v.Event.ID, "event_type": v.Event.Type}).
				Warn("the sink's when failed over an event, which it is not sent (logged once per sink; counted in scribehook_sink_when_errors_total)")
		}
	}
	return ok
}
