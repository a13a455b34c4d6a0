package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scribehook/scribehook/api"
)

// cmdBig sends one 2-hour pre-recorded result (about 20,000 words) and follows it: stored,
// subtitled (SRT and WebVTT), fanned out to a file sink and a webhook sink; serve's resident
// memory is sampled throughout and compared with the body's size.
func cmdBig(args []string) error {
	fs, c := newFlags("big")
	shape := fs.String("shape", shapePre2h, "body: pre-2h or pre-1m")
	every := fs.Duration("sample", 5*time.Millisecond, "RSS sampling interval")
	wait := fs.Duration("wait", 2*time.Minute, "bound of each wait")
	pause := fs.Duration("pause", 0, "pause before the measured send, printing serve's pid (to attach a profiler)")
	words := fs.Int("words", 0, "words of the measured result, the audio as long at the shape's pace (0: the shape's; 60000 gives issue 22's long result)")
	unknown := fs.Bool("unknown", false, "words carry members scribehook does not know (with -words 100000: issue 22's 15 MiB body)")
	_ = fs.Parse(args)

	spec := runSpec{Calls: callSpec{Shape: *shape, N: 1}, Warm: callSpec{Shape: shapePre1m, N: 1}, Hook: true, Words: *words, Unknown: *unknown}
	r, srv, err := c.startServe(spec, func(r *rig) serveSetup {
		setup := bothSinks(r)
		setup.Subtitles = true
		return setup
	})
	if err != nil {
		return err
	}
	defer r.close()
	calls, warmCalls, hook := r.calls, r.warm, r.hook
	big := calls[0]
	fmt.Printf("body: %s result of %d bytes (%s)\n", *shape, len(big.Body), mib(int64(len(big.Body))))

	// A 1-minute result first: everything lazily initialised on the first job (subtitle
	// profiles, the sinks' clients, SQLite's page cache) is then part of the baseline.
	warm := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: warmCalls, Conns: 1})
	if warm.OK != 1 {
		return fmt.Errorf("warm-up result not acknowledged: %s", warm.FirstErr)
	}
	if missing := hook.waitKeys(jobKeys(warmCalls[0].JobID), *wait); missing > 0 {
		return fmt.Errorf("%w: the warm-up job's events never arrived", errHook)
	}
	if _, _, err := waitDrained(srv.db, true, *wait); err != nil {
		return err
	}
	time.Sleep(time.Second)
	pid := srv.Pid()
	if *pause > 0 {
		fmt.Printf("serve pid %d on %s: sending in %s\n", pid, srv.addr, *pause)
		time.Sleep(*pause)
	}
	prof := r.startProfile(srv, "big")
	base, hwmBefore, err := memory(pid)
	if err != nil {
		return err
	}
	sampler := sampleRSS(pid, *every)
	start := time.Now()
	res := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: calls, Conns: 1, Timeout: time.Minute})
	acked := time.Since(start)
	if res.OK != 1 {
		sampler.stop()
		return fmt.Errorf("the %s result was not acknowledged: %s", *shape, res.FirstErr)
	}
	db, err := openReadOnly(srv.db)
	if err != nil {
		sampler.stop()
		return err
	}
	defer db.Close()
	var stored, subtitled time.Duration
	for deadline := time.Now().Add(*wait); stored == 0 || subtitled == 0; time.Sleep(2 * time.Millisecond) {
		status, arts, err := jobState(db, big.JobID)
		if err != nil {
			sampler.stop()
			return err
		}
		if stored == 0 && status == string(api.StatusDone) {
			stored = time.Since(start)
		}
		if subtitled == 0 && arts >= 2 {
			subtitled = time.Since(start)
		}
		if time.Now().After(deadline) {
			sampler.stop()
			return fmt.Errorf("job %s: status %q, %d artifacts after %s", big.JobID, status, arts, *wait)
		}
	}
	if missing := hook.waitKeys(jobKeys(big.JobID), *wait); missing > 0 {
		sampler.stop()
		return fmt.Errorf("%w: %d of the job's events never arrived", errHook, missing)
	}
	hooked := time.Since(start)
	if _, _, err := waitDrained(srv.db, true, *wait); err != nil {
		sampler.stop()
		return err
	}
	filed := time.Since(start)
	time.Sleep(500 * time.Millisecond)
	peak := sampler.stop()
	prof.finish()
	after, hwm, _ := memory(pid)
	if hwm > hwmBefore {
		peak = max(peak, hwm)
	}
	size := int64(len(big.Body))
	growth := peak - base
	fmt.Printf("times: acknowledged %s, stored %s, subtitles rendered %s, at the webhook %s, file sink done %s\n",
		acked.Round(time.Millisecond), stored.Round(time.Millisecond), subtitled.Round(time.Millisecond),
		hooked.Round(time.Millisecond), filed.Round(time.Millisecond))
	fmt.Printf("memory: RSS before %s, peak %s, after %s: growth %s = %.1f× the body (target ≤ 3×)\n",
		mib(base), mib(peak), mib(after), mib(growth), float64(growth)/float64(size))
	figures(fmt.Sprintf("%s result (%s): RSS growth %.1f× the body; stored %s → subtitles %s → sinks done %s   [target ≤ 3× / ≤ 300 ms]",
		*shape, mib(size), float64(growth)/float64(size), ms(stored), ms(subtitled), ms(filed)))
	for _, name := range []string{"transcript.txt", "subtitles.en.srt", "subtitles.en.vtt"} {
		if _, err := os.Stat(filepath.Join(srv.setup.FileSink, big.JobID, name)); err != nil {
			return fmt.Errorf("file sink: %w", err)
		}
	}
	if err := verifyOrFail(srv.db, calls, res.Out, "store check failed"); err != nil {
		return err
	}
	if *pause > 0 {
		fmt.Printf("done; stopping serve in %s\n", *pause)
		time.Sleep(*pause)
	}
	return srv.stop()
}

// jobKeys are the hook keys of a successful job's events.
func jobKeys(jobID string) []string {
	return []string{jobID + "/" + api.EventJobSucceeded, jobID + "/" + api.EventSubtitlesReady}
}

// jobState reads a job's status and how many artifacts it has.
func jobState(db *sql.DB, id string) (string, int, error) {
	var status string
	err := db.QueryRow(`SELECT status FROM jobs WHERE id = ?`, id).Scan(&status)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", 0, fmt.Errorf("read job %s: %w", id, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM artifacts WHERE job_id = ?`, id).Scan(&n); err != nil {
		return "", 0, fmt.Errorf("read artifacts of %s: %w", id, err)
	}
	return status, n, nil
}
