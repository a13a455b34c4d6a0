package sandbox

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults makes the sandbox misbehave the ways a real service and network do, so receivers can
// be tested against them. All off by default.
type Faults struct {
	// DuplicateCallbacks sends every callback this many extra times (after the first delivery
	// succeeds), like a service that retries although it got a 2xx.
	DuplicateCallbacks int
	// CallbackDelay holds every callback this long before its first attempt.
	CallbackDelay time.Duration
	// ReorderLive sends the live callbacks of a session in windows of this many messages, each
	// window in a shuffled order (deterministic with Seed). 0 or 1: in order.
	ReorderLive int
	// FailFirstAttempts counts the first N attempts of every callback as failed whatever the
	// receiver answers (the request is sent in full), so the receiver sees N+1 deliveries.
	FailFirstAttempts int
	// FailJobRate ends this fraction of pre-recorded jobs in error (code 500), 0–1.
	FailJobRate float64
	// DropCallbacks never sends this fraction of callbacks, 0–1: a pre-recorded job's result
	// (or error) callback, or one live message's callback, with every retry of it, as a
	// service whose retries ran out while the receiver was away, or a proxy that lost it. The
	// job or session still ends normally at the service: only reconciliation gets it back.
	DropCallbacks float64
	// Seed makes the random choices repeatable.
	Seed uint64
}

// ParseFaults reads the --faults flag: comma-separated key=value pairs, e.g.
// "duplicate=1,delay=200ms,reorder=5,fail-first=2,fail-jobs=0.25,drop=0.5,seed=7".
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return f, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return f, fmt.Errorf("faults: %q must be key=value", kv)
		}
		var err error
		switch k {
		case "duplicate":
			f.DuplicateCallbacks, err = nonNegativeInt(k, v)
		case "delay":
			f.CallbackDelay, err = time.ParseDuration(v)
			if err == nil && f.CallbackDelay < 0 {
				err = fmt.Errorf("faults: delay must not be negative")
			}
		case "reorder":
			f.ReorderLive, err = nonNegativeInt(k, v)
		case "fail-first":
			f.FailFirstAttempts, err = nonNegativeInt(k, v)
		case "fail-jobs":
			f.FailJobRate, err = strconv.ParseFloat(v, 64)
			if err == nil && (f.FailJobRate < 0 || f.FailJobRate > 1) {
				err = fmt.Errorf("faults: fail-jobs must be between 0 and 1 (got %v)", f.FailJobRate)
			}
		case "drop":
			f.DropCallbacks, err = strconv.ParseFloat(v, 64)
			if err == nil && (f.DropCallbacks < 0 || f.DropCallbacks > 1) {
				err = fmt.Errorf("faults: drop must be between 0 and 1 (got %v)", f.DropCallbacks)
			}
		case "seed":
			f.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			return f, fmt.Errorf("faults: unknown fault %q (known: duplicate, delay, reorder, fail-first, fail-jobs, drop, seed)", k)
		}
		if err != nil {
			return f, fmt.Errorf("faults: %s: %w", k, err)
		}
	}
	return f, nil
}

func nonNegativeInt(k, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s must not be negative (got %d)", k, n)
	}
	return n, nil
}

// dice is a seeded random source shared by the goroutines that inject faults.
type dice struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newDice(seed uint64) *dice {
	return &dice{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (d *dice) float() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64()
}

func (d *dice) shuffle(n int, swap func(i, j int)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.r.Shuffle(n, swap)
}
