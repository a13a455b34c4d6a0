package main

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// checkSinks checks the webhook receiver and the replicas' file sinks against the events the
// acknowledged calls must produce: every event at least once, no event applied under two ids,
// and every event id delivered more than once explained by a recorded failed attempt or by a
// lease of the killed replica. It prints its findings and returns the problems.
func checkSinks(db *sql.DB, hook *hookReceiver, procs []*serveProc, l replicaLoad, out []rOutcome, leasedAtKill map[int64]leased) []string {
	var problems []string
	keys := expectedKeys(l.Calls, out)
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	// explained says why an event id may have reached a sink twice: a failed attempt recorded
	// in its delivery row (a retry), or a lease held by the replica that was killed.
	killLeased := map[string]bool{}
	for _, d := range leasedAtKill {
		killLeased[d.Sink+"/"+d.EventID] = true
	}
	explain := func(sink string, rows map[string]deliveryState, id string) string {
		if killLeased[sink+"/"+id] {
			return "leased when a replica was killed"
		}
		if d, ok := rows[id]; ok && d.Attempts > 0 {
			return fmt.Sprintf("%d failed attempts recorded", d.Attempts)
		}
		return ""
	}

	// The webhook receiver.
	hookRows, err := sinkRows(db, "hook")
	if err != nil {
		return []string{err.Error()}
	}
	missing := hook.waitKeys(keys, 30*time.Second)
	st := hook.stats()
	var dupIDs []string
	twice := 0
	hook.mu.Lock()
	for id, n := range hook.PerID {
		if n > 1 {
			dupIDs = append(dupIDs, id)
		}
	}
	for k, ids := range hook.KeyIDs {
		if want[k] && len(ids) > 1 {
			twice++
		}
	}
	hook.mu.Unlock()
	sort.Strings(dupIDs)
	var unexplained []string
	reasons := map[string]int{}
	for _, id := range dupIDs {
		if why := explain("hook", hookRows, id); why != "" {
			reasons[why]++
		} else {
			unexplained = append(unexplained, id)
		}
	}
	fmt.Printf("webhook: %d events expected, %d distinct webhook-ids received in %d deliveries, %d missing, %d events under two ids, %d bad signatures\n",
		len(keys), st.Distinct, st.Total, missing, twice, st.Bad)
	if len(dupIDs) > 0 {
		fmt.Printf("webhook: %d webhook-ids delivered more than once (at least once; retries): %s; unexplained %d %s\n",
			len(dupIDs), reasonLine(reasons), len(unexplained), sample(unexplained))
	}
	if missing > 0 || twice > 0 || st.Bad > 0 {
		problems = append(problems, fmt.Sprintf("webhook: %d events missing, %d applied under two event ids, %d bad signatures", missing, twice, st.Bad))
	}
	if len(unexplained) > 0 {
		problems = append(problems, fmt.Sprintf("webhook: %d webhook-ids delivered twice without a failed attempt or a killed replica to explain it, e.g. %s",
			len(unexplained), sample(unexplained)))
	}

	// The file sinks: one directory per replica; an event's file must be in exactly one.
	fileRows, err := sinkRows(db, "files")
	if err != nil {
		return append(problems, err.Error())
	}
	type where struct{ dirs []int }
	perID := map[string]*where{}
	merged := newArrivals() // the wanted events' files of every replica
	files, other, unreadable := 0, 0, 0
	var perDir []string
	for i, p := range procs {
		scan, err := scanFileSink(p.setup.FileSink)
		if err != nil {
			return append(problems, err.Error())
		}
		unreadable += scan.Unreadable
		mine := 0
		for k, ids := range scan.KeyIDs {
			if !want[k] {
				other += len(ids)
				continue
			}
			for id := range ids {
				if perID[id] == nil {
					perID[id] = &where{}
				}
				for range scan.PerID[id] {
					merged.add(k, id)
					perID[id].dirs = append(perID[id].dirs, i)
					files++
					mine++
				}
			}
		}
		perDir = append(perDir, fmt.Sprintf("replica %d %d", i+1, mine))
	}
	fileMissing, fileTwice := merged.keyCounts(keys)
	var fileDups, fileUnexplained []string
	freasons := map[string]int{}
	for id, w := range perID {
		if len(w.dirs) > 1 {
			fileDups = append(fileDups, id)
			if why := explain("files", fileRows, id); why != "" {
				freasons[why]++
			} else {
				fileUnexplained = append(fileUnexplained, fmt.Sprintf("%s in replicas %v", id, w.dirs))
			}
		}
	}
	sort.Strings(fileUnexplained)
	fmt.Printf("file sinks: %d event files for %d events (%s), %d missing, %d events under two ids, %d event ids in two files, %d unreadable, %d files of the warm-up\n",
		files, len(keys), strings.Join(perDir, ", "), fileMissing, fileTwice, len(fileDups), unreadable, other)
	if len(fileDups) > 0 {
		fmt.Printf("file sinks: event ids written twice: %s; unexplained %d %s\n", reasonLine(freasons), len(fileUnexplained), sample(fileUnexplained))
	}
	if fileMissing+fileTwice+unreadable > 0 {
		problems = append(problems, fmt.Sprintf("file sinks: %d events missing, %d under two ids, %d unreadable files", fileMissing, fileTwice, unreadable))
	}
	if len(fileUnexplained) > 0 {
		problems = append(problems, fmt.Sprintf("file sinks: %d event ids written by two replicas without a killed replica or a failed attempt to explain it, e.g. %s",
			len(fileUnexplained), sample(fileUnexplained)))
	}
	return problems
}

func reasonLine(m map[string]int) string {
	var parts []string
	for why, n := range m {
		parts = append(parts, fmt.Sprintf("%d %s", n, why))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none explained"
	}
	return strings.Join(parts, ", ")
}

func sample(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	if len(ids) > 5 {
		return "[" + strings.Join(ids[:5], " ") + " …]"
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// brokerSummary describes what the broker holds after the run: the streams the bus made and
// their messages, evidence that the notices went through it.
func brokerSummary(kind, url string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch kind {
	case "redisstream":
		opts, err := redis.ParseURL(url)
		if err != nil {
			return err.Error()
		}
		c := redis.NewClient(opts)
		defer c.Close()
		var parts []string
		iter := c.Scan(ctx, 0, "*", 0).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			typ, err := c.Type(ctx, key).Result()
			if err != nil || typ != "stream" {
				continue
			}
			n, _ := c.XLen(ctx, key).Result()
			desc := fmt.Sprintf("stream %s: %d entries", key, n)
			if groups, err := c.XInfoGroups(ctx, key).Result(); err == nil {
				for _, g := range groups {
					desc += fmt.Sprintf(", group %s %d pending", g.Name, g.Pending)
				}
			}
			parts = append(parts, desc)
		}
		if err := iter.Err(); err != nil {
			return err.Error()
		}
		if len(parts) == 0 {
			return "redis holds no stream: the replicas did not publish on the bus"
		}
		sort.Strings(parts)
		if len(parts) > 8 {
			parts = append(parts[:8], fmt.Sprintf("… %d streams in all", len(parts)))
		}
		return strings.Join(parts, "; ")
	case "nats":
		nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
		if err != nil {
			return err.Error()
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err.Error()
		}
		var parts []string
		lister := js.ListStreams(ctx)
		for info := range lister.Info() {
			desc := fmt.Sprintf("stream %s: %d messages", info.Config.Name, info.State.Msgs)
			if st, err := js.Stream(ctx, info.Config.Name); err == nil {
				cl := st.ListConsumers(ctx)
				for ci := range cl.Info() {
					desc += fmt.Sprintf(", consumer %s %d delivered, %d unacknowledged, %d not yet delivered",
						ci.Name, ci.Delivered.Consumer, ci.NumAckPending, ci.NumPending)
				}
			}
			parts = append(parts, desc)
		}
		if err := lister.Err(); err != nil {
			parts = append(parts, err.Error())
		}
		if len(parts) == 0 {
			return "JetStream holds no stream: the replicas did not publish on the bus"
		}
		sort.Strings(parts)
		return strings.Join(parts, "; ")
	}
	return ""
}

// brokerUnacked counts the notices the broker has handed to a replica and not had
// acknowledged yet (Redis: the consumer groups' pending entries; JetStream: the consumers'
// unacknowledged and undelivered messages).
func brokerUnacked(kind, url string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int64
	switch kind {
	case "redisstream":
		opts, err := redis.ParseURL(url)
		if err != nil {
			return 0, err
		}
		c := redis.NewClient(opts)
		defer c.Close()
		iter := c.Scan(ctx, 0, "*", 0).Iterator()
		for iter.Next(ctx) {
			if typ, err := c.Type(ctx, iter.Val()).Result(); err != nil || typ != "stream" {
				continue
			}
			groups, err := c.XInfoGroups(ctx, iter.Val()).Result()
			if err != nil {
				return 0, err
			}
			for _, g := range groups {
				n += g.Pending
			}
		}
		return n, iter.Err()
	case "nats":
		nc, err := nats.Connect(url, nats.Timeout(2*time.Second))
		if err != nil {
			return 0, err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return 0, err
		}
		lister := js.ListStreams(ctx)
		for info := range lister.Info() {
			st, err := js.Stream(ctx, info.Config.Name)
			if err != nil {
				return 0, err
			}
			cl := st.ListConsumers(ctx)
			for ci := range cl.Info() {
				n += int64(ci.NumAckPending) + int64(ci.NumPending)
			}
			if err := cl.Err(); err != nil {
				return 0, err
			}
		}
		return n, lister.Err()
	}
	return 0, nil
}

// waitNoticesTaken waits until the broker has no unacknowledged notice left: those a killed
// replica held, or a restarted broker redelivers, must be taken by a live replica (after
// bus.claim_after) and acknowledged.
func waitNoticesTaken(kind, url string, since time.Time, timeout time.Duration) (string, error) {
	start := time.Now()
	first := int64(-1)
	for {
		n, err := brokerUnacked(kind, url)
		if err != nil {
			return "", fmt.Errorf("read the broker's unacknowledged notices: %w", err)
		}
		if first < 0 {
			first = n
		}
		if n == 0 {
			if first == 0 {
				return "no notice left unacknowledged", nil
			}
			return fmt.Sprintf("the %d notices left unacknowledged after the drain were taken by a live replica and acknowledged %s after the fault",
				first, time.Since(since).Round(time.Second)), nil
		}
		if time.Since(start) > timeout {
			return "", fmt.Errorf("%d notices still unacknowledged %s after the fault (%d after the drain): no live replica took them",
				n, time.Since(since).Round(time.Second), first)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
