package store

import (
	"context"
	"fmt"
	"iter"

	"github.com/scribehook/scribehook/api"
)

// AllJobs lists the jobs q filters from q's page to the last, one page of q's limit at a
// time, so that no single read holds a long list: the store's counterpart of the service
// client's All. The iteration ends at the first error, which it yields.
func AllJobs(ctx context.Context, s Store, q api.ListQuery) iter.Seq2[JobRecord, error] {
	return func(yield func(JobRecord, error) bool) {
		for {
			page, err := s.ListJobs(ctx, q)
			if err != nil {
				yield(JobRecord{}, fmt.Errorf("list jobs: %w", err))
				return
			}
			for _, rec := range page.Items {
				if !yield(rec, nil) {
					return
				}
			}
			if !page.More || len(page.Items) == 0 {
				return
			}
			next := len(page.Items)
			if q.Offset != nil {
				next += *q.Offset
			}
			q.Offset = api.Int(next)
		}
	}
}

// liveMessagePage is how many messages AllLiveMessages reads at a time.
const liveMessagePage = 1000

// AllLiveMessages lists a session's stored messages in order, a page at a time, so that a long
// session is never held in memory at once. The iteration ends at the first error, which it
// yields.
func AllLiveMessages(ctx context.Context, s Store, sessionID string) iter.Seq2[LiveMessage, error] {
	return func(yield func(LiveMessage, error) bool) {
		var after int64
		for {
			msgs, err := s.LiveMessages(ctx, sessionID, after, liveMessagePage)
			if err != nil {
				yield(LiveMessage{}, fmt.Errorf("read live messages of %s: %w", sessionID, err))
				return
			}
			for _, m := range msgs {
				if !yield(m, nil) {
					return
				}
			}
			if len(msgs) < liveMessagePage {
				return
			}
			after = msgs[len(msgs)-1].Seq
		}
	}
}

// AllHits lists the hits of q from q's page to the last, one page of q's limit at a time, as
// AllJobs lists jobs. The iteration ends at the first error, which it yields.
func AllHits(ctx context.Context, s Searcher, q SearchQuery) iter.Seq2[SearchHit, error] {
	return func(yield func(SearchHit, error) bool) {
		for {
			page, err := s.Search(ctx, q)
			if err != nil {
				yield(SearchHit{}, fmt.Errorf("search: %w", err))
				return
			}
			for _, h := range page.Items {
				if !yield(h, nil) {
					return
				}
			}
			if !page.More || len(page.Items) == 0 {
				return
			}
			q.List.Offset = api.Int(q.List.EffectiveOffset() + len(page.Items))
		}
	}
}
