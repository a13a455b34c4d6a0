package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/scribehook/scribehook/internal/testinfra"
)

// faultDiskFull fills the file system of serve's database while serve runs: every callback
// must then be answered 5xx (never 2xx without being stored, never 4xx, which the service would
// not retry), and serve must take deliveries again once space returns, without a restart. With
// -remount it also restarts serve on the file system remounted read-only.
//
// -db-dir must be on a small file system of its own (scripts/fault-diskfull.sh mounts a tmpfs):
// the run fills it to the last byte.
func faultDiskFull(args []string) error {
	fs, c := newFlags("fault diskfull")
	dbDir := fs.String("db-dir", "", "directory on a small file system of its own, for the database (required)")
	remount := fs.Bool("remount", false, "also remount -db-dir read-only (root; -db-dir must be a mount point) and restart serve on it")
	attempts := fs.Int("attempts", 2000, "bound of the callbacks sent while the disk is full")
	_ = fs.Parse(args)
	if *dbDir == "" {
		return errors.New("fault diskfull: -db-dir is required (a directory on a small file system of its own)")
	}

	// 1-minute results (about 20 KB each): each commit needs fresh pages, so a full disk shows
	// after a few deliveries instead of hiding in WAL space that SQLite reuses.
	// A delivery of a result costs about three times its body in the database (the inbox row,
	// the job record, the queued event): few before and after, so a small file system holds them.
	const nBefore, nAfter = 50, 50
	// No sink: a sink delivery claimed while the disk is full keeps its lease (a minute) before
	// it is tried again, which would only make the run longer; the receiver is what is tested.
	spec := runSpec{Calls: callSpec{Shape: shapePre1m, N: nBefore + *attempts + nAfter}}
	r, srv, err := c.startServe(spec, func(*rig) serveSetup { return serveSetup{DBDir: *dbDir} })
	if err != nil {
		return err
	}
	defer r.close()
	calls := r.calls
	before, during, after := calls[:nBefore], calls[nBefore:nBefore+*attempts], calls[nBefore+*attempts:]
	var st syscall.Statfs_t
	if err := syscall.Statfs(*dbDir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", *dbDir, err)
	}
	fmt.Printf("database on %s (%s file system)\n", *dbDir, mib(int64(st.Blocks)*st.Bsize))

	send := func(cs []callback, retry bool) loadResult {
		return runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: cs, Conns: 4, Retry: retry, RetryFor: time.Minute, Timeout: 20 * time.Second})
	}
	var problems findings
	base := send(before, false)
	fmt.Printf("before: %s\n", describeLoad(base))
	if base.OK != len(before) {
		return fmt.Errorf("callbacks failed before the disk was full: %s", base.statusLine())
	}

	filler := filepath.Join(*dbDir, "filler")
	size, err := fill(filler)
	if err != nil {
		return err
	}
	fmt.Printf("disk full: %s of filler written\n", mib(size))
	// One at a time, as a retrying service would send them, until twenty 5xx in a row: the
	// first commits may still fit in pages SQLite already holds.
	var full loadResult
	full.Statuses = map[int]int{}
	full.Out = make([]outcome, len(during))
	streak, sent := 0, 0
	for i := range during {
		r := send(during[i:i+1], false)
		full.Out[i] = r.Out[0]
		sent++
		full.Statuses[r.Out[0].Status]++
		if r.Out[0].Status/100 == 5 {
			streak++
		} else {
			streak = 0
		}
		if streak == 20 {
			break
		}
	}
	fmt.Printf("while full: %d sent, answers %s\n", sent, statusLine(full.Statuses))
	if full.Statuses[0] > 0 {
		problems.add("%d callbacks got no answer while the disk was full", full.Statuses[0])
	}
	for code, k := range full.Statuses {
		if code/100 == 4 {
			problems.add("%d callbacks answered %d while the disk was full: the service would not retry them", k, code)
		}
	}
	if streak < 20 {
		problems.add("the disk never looked full: %d callbacks, no 20 failures in a row", sent)
	}
	for _, o := range full.Out {
		if o.Status == 503 {
			fmt.Printf("a 5xx answer: %d %s\n", o.Status, o.Err)
			break
		}
	}
	// A load balancer must stop sending here: /readyz says the store cannot take writes.
	if code, body := httpGet(srv.url("/readyz")); code != 0 {
		fmt.Printf("/readyz while full: %d %s\n", code, strings.TrimSpace(truncate(body, 200)))
		if code != 503 {
			problems.add("/readyz answered %d while the disk was full, want 503", code)
		}
	}
	if !srv.Running() {
		return fmt.Errorf("serve exited while the disk was full: %v", srv.ExitErr())
	}

	if err := os.Remove(filler); err != nil {
		return fmt.Errorf("free the disk: %w", err)
	}
	freed := time.Now()
	var recovered time.Duration
	for i := 0; recovered == 0; i++ {
		r := send(after[i:i+1], false)
		if r.OK == 1 {
			recovered = time.Since(freed)
		} else if time.Since(freed) > 30*time.Second {
			return fmt.Errorf("no 2xx 30s after the disk was freed: %s", r.statusLine())
		}
		if recovered == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	fmt.Printf("space back: first 2xx %s after the filler was removed\n", recovered.Round(time.Millisecond))
	if code, body := httpGet(srv.url("/readyz")); code != 200 {
		problems.add("/readyz answered %d %s once space returned, want 200", code, strings.TrimSpace(truncate(body, 200)))
	}
	rest := send(after, true)
	// The service retries what was answered 5xx: those deliveries must now be stored.
	var retried []callback
	for i, o := range full.Out[:sent] {
		if o.Status/100 != 2 {
			retried = append(retried, during[i])
		}
	}
	again := send(retried, true)
	fmt.Printf("after: %s; the %d refused deliveries resent: %s\n", describeLoad(rest), len(retried), describeLoad(again))
	if rest.OK != len(after) || again.OK != len(retried) {
		problems.add("after recovery: %d/%d and %d/%d acknowledged", rest.OK, len(after), again.OK, len(retried))
	}
	left, waited, derr := waitDrained(srv.db, false, 2*time.Minute)
	fmt.Printf("processing: drained %s later (%d pending, %d failed)\n", waited.Round(time.Millisecond), left.Pending, left.Failed)
	if derr != nil {
		problems = append(problems, derr.Error())
	}
	if left.Failed > 0 {
		problems.add("%d inbox rows marked failed: deliveries acknowledged but never processed", left.Failed)
	}
	all := append(append(append([]callback{}, before...), during[:sent]...), after...)
	outs := append(append(append([]outcome{}, base.Out...), full.Out[:sent]...), rest.Out...)
	// The refused deliveries were resent and acknowledged (again): they count as acknowledged.
	for i, o := range full.Out[:sent] {
		if o.Status/100 != 2 {
			outs[len(before)+i] = outcome{Sent: true, Status: 200}
		}
	}
	check, err := verifyStore(srv.db, all, outs)
	if err != nil {
		return err
	}
	problems.check("store", check)
	if *remount {
		if err := readOnlyRestart(srv, *dbDir, after[len(after)-1]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if err := problems.pass("disk full", "5xx while the disk was full, 2xx again once space returned, every 2xx stored and processed"); err != nil {
		return err
	}
	return srv.stop()
}

// fill writes path until the file system has no byte left, and returns how much it wrote.
func fill(path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("create filler: %w", err)
	}
	defer f.Close()
	var total int64
	for _, chunk := range []int{1 << 20, 64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, chunk)
		for {
			n, err := f.Write(buf)
			total += int64(n)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return total, fmt.Errorf("write filler: %w", err)
			}
		}
	}
	return total, nil
}

// readOnlyRestart stops serve, remounts the database's file system read-only and starts serve
// again: a read-only database must give 5xx or a refusal to start that names the cause, never a
// 2xx. It then remounts read-write and checks serve takes deliveries again.
func readOnlyRestart(srv *serveProc, dbDir string, probe callback) error {
	if err := srv.stop(); err != nil {
		return fmt.Errorf("stop before the read-only remount: %w", err)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", dbDir).CombinedOutput(); err != nil {
		fmt.Printf("read-only: skipped, remount refused: %s\n", strings.TrimSpace(string(out)))
		return srv.Start(context.Background())
	}
	defer func() { _ = exec.Command("mount", "-o", "remount,rw", dbDir).Run() }()
	var problem error
	if err := srv.Start(context.Background()); err != nil {
		first := strings.SplitN(err.Error(), "\n", 2)[0]
		fmt.Printf("read-only: serve refuses to start: %s\n", truncate(first, 300))
		fmt.Printf("read-only: its log ends with: %s\n", strings.TrimSpace(testinfra.Tail(srv.Log(), 400)))
	} else {
		r := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: []callback{probe}, Conns: 1})
		fmt.Printf("read-only: serve started; a callback got %s\n", r.statusLine())
		if r.Out[0].Status/100 != 5 {
			problem = fmt.Errorf("read-only database: callback answered %d, want 5xx", r.Out[0].Status)
		}
		_ = srv.stop()
	}
	if out, err := exec.Command("mount", "-o", "remount,rw", dbDir).CombinedOutput(); err != nil {
		return fmt.Errorf("remount read-write: %s: %w", strings.TrimSpace(string(out)), err)
	}
	if err := srv.Start(context.Background()); err != nil {
		return fmt.Errorf("start after the read-write remount: %w", err)
	}
	r := runLoad(loadSpec{Addr: srv.addr, Path: callbackPath, Calls: []callback{probe}, Conns: 1})
	fmt.Printf("read-write again: a callback got %s\n", r.statusLine())
	if r.OK != 1 {
		return fmt.Errorf("after the read-write remount: %s", r.statusLine())
	}
	return problem
}
