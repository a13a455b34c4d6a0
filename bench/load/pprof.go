package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// profileRun takes serve's profiles over one measured phase through its profiling endpoint
// (debug.listen, -pprof): a heap profile before and after, and the CPU in one-second pieces
// until finish, merged into one profile (a CPU profile's length is fixed when it starts, a
// phase's is not; the pieces follow each other within milliseconds). finish writes the top
// functions beside the profiles, so that a run says where the time and the allocations went.
type profileRun struct {
	dir, name, addr string
	stop, done      chan struct{}
	parts           []string
	errs            []string
	began           time.Time
}

// profileClient waits for a CPU piece (one second) and a heap profile; nothing longer.
var profileClient = &http.Client{Timeout: 30 * time.Second}

// startProfile starts profiling srv's phase name, when the run has -pprof; nil otherwise (its
// finish does nothing).
func (r *rig) startProfile(srv *serveProc, name string) *profileRun {
	if r.pprof == "" || srv.setup.DebugListen == "" {
		return nil
	}
	p := &profileRun{dir: r.pprof, name: name, addr: srv.setup.DebugListen, stop: make(chan struct{}), done: make(chan struct{})}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		p.errs = append(p.errs, err.Error())
	}
	p.save("heap", p.file("heap-before.pb.gz"))
	p.began = time.Now()
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			part := p.file(fmt.Sprintf("cpu-part%03d.pb.gz", i))
			if !p.save("profile?seconds=1", part) {
				return // the reason is kept; the endpoint will not answer the next piece either
			}
			p.parts = append(p.parts, part)
		}
	}()
	return p
}

func (p *profileRun) file(name string) string { return filepath.Join(p.dir, p.name+"-"+name) }

// save writes the profile at /debug/pprof/<path> to file; false (and the reason kept) when it
// could not.
func (p *profileRun) save(path, file string) bool {
	resp, err := profileClient.Get("http://" + p.addr + "/debug/pprof/" + path)
	if err != nil {
		p.errs = append(p.errs, err.Error())
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		p.errs = append(p.errs, fmt.Sprintf("GET %s: %d %s", path, resp.StatusCode, truncate(string(b), 200)))
		return false
	}
	f, err := os.Create(file)
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		p.errs = append(p.errs, fmt.Sprintf("save %s: %v", file, err))
		return false
	}
	return true
}

// finish ends the phase: the CPU piece under way completes, the heap is taken again, the
// pieces are merged (go tool pprof -proto) and the tops written: CPU by flat and cumulative
// time, and the bytes allocated during the phase (alloc_space, after minus before).
func (p *profileRun) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	took := time.Since(p.began)
	heapAfter := p.file("heap-after.pb.gz")
	p.save("heap", heapAfter)
	cpu := p.file("cpu.pb.gz")
	if len(p.parts) > 0 {
		if out, err := goPprof(append([]string{"-proto"}, p.parts...)...); err != nil {
			p.errs = append(p.errs, err.Error())
		} else if err := os.WriteFile(cpu, out, 0o644); err != nil {
			p.errs = append(p.errs, err.Error())
		} else {
			for _, part := range p.parts {
				_ = os.Remove(part)
			}
		}
	}
	tops := []struct {
		file string
		args []string
	}{
		{"cpu-top.txt", []string{"-top", "-nodecount=40", cpu}},
		{"cpu-cum.txt", []string{"-top", "-cum", "-nodecount=40", cpu}},
		{"alloc-top.txt", []string{"-top", "-nodecount=30", "-sample_index=alloc_space", "-diff_base", p.file("heap-before.pb.gz"), heapAfter}},
	}
	var cpuTop []byte
	for _, t := range tops {
		if len(p.errs) > 0 {
			break // a profile is missing: pprof would only say so again
		}
		out, err := goPprof(t.args...)
		if err != nil {
			p.errs = append(p.errs, err.Error())
			continue
		}
		if t.file == "cpu-top.txt" {
			cpuTop = out
		}
		_ = os.WriteFile(p.file(t.file), out, 0o644)
	}
	fmt.Printf("profiles of %s (%s, %d CPU pieces of 1 s): %s-{cpu.pb.gz,heap-before.pb.gz,heap-after.pb.gz,cpu-top.txt,cpu-cum.txt,alloc-top.txt}\n",
		p.name, took.Round(time.Millisecond), len(p.parts), filepath.Join(p.dir, p.name))
	if len(cpuTop) > 0 {
		fmt.Println("  " + strings.Join(topLines(string(cpuTop), 15), "\n  "))
	}
	if len(p.errs) > 0 {
		fmt.Printf("profiles of %s incomplete: %s\n", p.name, strings.Join(p.errs, "; "))
	}
}

// topLines keeps of pprof's -top output the samples line, the column header and the first n
// functions.
func topLines(top string, n int) []string {
	var out []string
	rows := -1
	for line := range strings.SplitSeq(strings.TrimSpace(top), "\n") {
		switch {
		case strings.HasPrefix(line, "Duration:"):
			out = append(out, line)
		case rows < 0 && strings.Contains(line, "flat%"):
			out, rows = append(out, line), 0
		case rows >= 0 && rows < n:
			out, rows = append(out, line), rows+1
		}
	}
	return out
}

// goPprof runs go tool pprof with args and returns its output.
func goPprof(args ...string) ([]byte, error) {
	cmd := exec.Command("go", append([]string{"tool", "pprof"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof %s: %w: %s", strings.Join(args, " "), err, truncate(stderr.String(), 300))
	}
	return out, nil
}
