package sinks

import (
	"context"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sinks/sinkexpr"
)

// EventView is one event as the filters of every sink see it: the expressions of all of them
// (Filter.When) share its decoded data, decoded once, at the first that needs it.
type EventView struct {
	Event *api.Event
	expr  *sinkexpr.Event
}

// ViewOf is ev's view; nothing is decoded until an expression asks.
func ViewOf(ev *api.Event) *EventView { return &EventView{Event: ev} }

// Expr is the view's event as expressions see it.
func (v *EventView) Expr() *sinkexpr.Event {
	if v.expr == nil {
		v.expr = sinkexpr.NewEvent(exprInput(v.Event))
	}
	return v.expr
}

func exprInput(ev *api.Event) sinkexpr.Input {
	return sinkexpr.Input{
		ID: ev.ID, Type: ev.Type, CreatedAt: ev.CreatedAt.String(), JobID: ev.JobID, Kind: string(ev.Kind),
		Category: string(ev.Category), CustomMetadata: ev.CustomMetadata, Data: ev.Data,
	}
}

// Check reports whether the view's event passes the filter, as Match does, and the error of its
// When when evaluating it failed (a field the event lacks, a value of another type, the cost
// limit): such an event does not pass, and the caller counts and logs it.
func (f Filter) Check(ctx context.Context, v *EventView) (bool, error) {
	if !f.matchStatic(v.Event) {
		return false, nil
	}
	if f.When == nil {
		return true, nil
	}
	return f.When.Match(ctx, v.Expr())
}
