//go:build pocketsphinx

package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scribehook/scribehook/sandbox/audio"
)

// benchAudio is the speech the benchmarks decode: the flite sentences with 1 s pauses
// (31 s), or the LibriVox clips of pocketsphinx-testdata one after another (25 s).
func benchAudio(b *testing.B, kind string) []float32 {
	b.Helper()
	if kind == "flite" {
		return speak(b, psSentences, 1).samples
	}
	return librivox(b)
}

func librivox(b testing.TB) []float32 {
	b.Helper()
	ids, err := os.ReadFile(filepath.Join(librivoxDir, "fileids"))
	if err != nil {
		b.Skipf("pocketsphinx-testdata not installed (%v)", err)
	}
	var x []float32
	for _, id := range strings.Fields(string(ids)) {
		x = append(x, readAudio16k(b, filepath.Join(librivoxDir, id+".wav"))[0]...)
	}
	return x
}

// Real-time factor of pre-recorded decoding on one decoder: seconds of processing per second
// of audio.
func BenchmarkPocketsphinxTranscribe(b *testing.B) {
	for _, kind := range []string{"flite", "librivox"} {
		b.Run(kind, func(b *testing.B) {
			p := newPSEngine(b, PocketsphinxOptions{Decoders: 1})
			x := benchAudio(b, kind)
			sec := float64(len(x)) / SampleRate
			req := Request{Channels: [][]float32{x}}
			if _, err := p.Transcribe(context.Background(), req); err != nil { // warm the page cache
				b.Fatal(err)
			}
			start := time.Now()
			n := 0
			for b.Loop() {
				if _, err := p.Transcribe(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(time.Since(start).Seconds()/(sec*float64(n)), "rtf")
			b.ReportMetric(sec, "audio-s/op")
		})
	}
}

// Real-time factor with every CPU busy: one job a decoder, as many decoders as CPUs; the RTF
// is wall time over the audio of all the jobs.
func BenchmarkPocketsphinxTranscribeParallel(b *testing.B) {
	cpus := runtime.NumCPU()
	p := newPSEngine(b, PocketsphinxOptions{Decoders: cpus})
	x := benchAudio(b, "librivox")
	sec := float64(len(x)) / SampleRate
	req := Request{Channels: [][]float32{x}}
	start := time.Now()
	n := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for range cpus {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.Transcribe(context.Background(), req); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		n++
	}
	b.ReportMetric(time.Since(start).Seconds()/(sec*float64(n*cpus)), "rtf")
	b.ReportMetric(float64(cpus), "decoders")
}

// Real-time factor of a live stream fed 100 ms chunks, partials every 0.5 s included.
func BenchmarkPocketsphinxStream(b *testing.B) {
	p := newPSEngine(b, PocketsphinxOptions{Decoders: 1})
	x := benchAudio(b, "flite")
	sec := float64(len(x)) / SampleRate
	cfg := StreamConfig{Endpointing: 0.3, SpeechThreshold: DefaultSpeechThreshold}
	var busy time.Duration
	n := 0
	for b.Loop() {
		busy += runStream(b, p, cfg, [][]float32{x}, SampleRate/10).busy
		n++
	}
	b.ReportMetric(busy.Seconds()/(sec*float64(n)), "rtf")
}

// Memory of a decoder: the resident set one adds when loaded (the first, then a second beside
// it), and the peak resident set above the baseline while the first decodes 25 s of speech.
// Each op runs in a fresh process (TestPocketsphinxMemoryChild), because memory a decoder frees
// stays in the C allocator and the next decoder of the same process would reuse it unseen.
func BenchmarkPocketsphinxDecoderMemory(b *testing.B) {
	psModelOrSkip(b)
	var first, second, peak float64
	n := 0
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPocketsphinxMemoryChild$", "-test.v")
		cmd.Env = append(os.Environ(), psMemoryChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		i := bytes.Index(out, []byte("memory:"))
		if i < 0 {
			b.Fatalf("no measurement in %s", out)
		}
		var f, s, p float64
		if _, err := fmt.Sscanf(string(out[i:]), "memory: first %f second %f peak %f", &f, &s, &p); err != nil {
			b.Fatalf("%v in %s", err, out)
		}
		first, second, peak = first+f, second+s, peak+p
		n++
	}
	b.ReportMetric(first/float64(n), "MiB-first")
	b.ReportMetric(second/float64(n), "MiB-second")
	b.ReportMetric(peak/float64(n), "MiB-peak")
}

const psMemoryChildEnv = "SCRIBEHOOK_PS_MEMORY_CHILD"

// TestPocketsphinxMemoryChild is BenchmarkPocketsphinxDecoderMemory's measurement, run in a
// process of its own; it does nothing in a normal test run.
func TestPocketsphinxMemoryChild(t *testing.T) {
	if os.Getenv(psMemoryChildEnv) == "" {
		t.Skip("run by BenchmarkPocketsphinxDecoderMemory")
	}
	psModelOrSkip(t)
	x := audio.Int16(librivox(t))
	args, err := psArgs(PocketsphinxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// loaded is a decoder loaded now and freed at the end, and the resident memory it added.
	loaded := func() (*psDecoder, float64) {
		before := procStatus(t, "VmRSS")
		d, err := newPSDecoder(args)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.free)
		return d, procStatus(t, "VmRSS") - before
	}
	runtime.GC()
	base := procStatus(t, "VmRSS")
	d, first := loaded()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident set: %v", err)
	}
	d.resetCMN()
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	if err := d.process(x, psFrame); err != nil {
		t.Fatal(err)
	}
	if err := d.end(); err != nil {
		t.Fatal(err)
	}
	_ = d.words()
	peak := procStatus(t, "VmHWM") - base
	_, second := loaded()
	fmt.Printf("memory: first %.1f second %.1f peak %.1f\n", first, second, peak)
}

// procStatus reads a size field of /proc/self/status in MiB.
func procStatus(b testing.TB, field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
