package audio

import (
	"math"
	"reflect"
	"testing"
)

// toneSilence builds alternating tone and silence at 16 kHz: the stretches are given in seconds,
// tone first. Silence carries faint noise (-86 dBFS) so that it is not digital zero.
func toneSilence(stretches ...float64) []float32 {
	var out []float32
	seed := uint32(1)
	for i, d := range stretches {
		n := int(math.Round(d * 16000))
		for j := range n {
			if i%2 == 0 {
				out = append(out, float32(0.5*math.Sin(2*math.Pi*220*float64(j)/16000)))
			} else {
				seed = seed*1664525 + 1013904223
				out = append(out, float32(int32(seed))/(1<<31)*1e-4)
			}
		}
	}
	return out
}

func segment(t *testing.T, cfg SegmenterConfig, x []float32, sizes ...int) []SegmentEvent {
	t.Helper()
	s, err := NewSegmenter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var evs []SegmentEvent
	for i, k := 0, 0; i < len(x); k++ {
		n := len(x) - i
		if len(sizes) > 0 {
			n = min(sizes[k%len(sizes)], n)
		}
		evs = append(evs, s.Write(x[i:i+n])...)
		i += n
	}
	return append(evs, s.Flush()...)
}

func kinds(evs []SegmentEvent) []SegmentEventKind {
	var k []SegmentEventKind
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return k
}

func near(got, want float64) bool { return math.Abs(got-want) <= 0.02+1e-9 }

func TestSegmenterToneSilenceTone(t *testing.T) {
	cfg := SegmenterConfig{SampleRate: 16000, Threshold: 0.6, MinSilence: 0.3}
	evs := segment(t, cfg, toneSilence(1, 1, 1.5, 0.5))
	want := []SegmentEventKind{SpeechStart, SegmentStart, SpeechEnd, SegmentEnd, SpeechStart, SegmentStart, SpeechEnd, SegmentEnd}
	if !reflect.DeepEqual(kinds(evs), want) {
		t.Fatalf("events %v, want %v", kinds(evs), want)
	}
	ends := []SegmentEvent{evs[3], evs[7]}
	for i, w := range [][2]float64{{0, 1}, {2, 3.5}} {
		if !near(ends[i].Start, w[0]) || !near(ends[i].End, w[1]) || ends[i].Segment != i {
			t.Errorf("segment %d: %+v, want %v–%v", i, ends[i], w[0], w[1])
		}
	}
	if !near(evs[0].Start, 0) || !near(evs[2].Start, 1) || !near(evs[4].Start, 2) || !near(evs[6].Start, 3.5) {
		t.Errorf("speech events at %v %v %v %v", evs[0].Start, evs[2].Start, evs[4].Start, evs[6].Start)
	}
	// The end of the first segment is known once 0.3 s of silence has passed.
	if f := evs[2].Frame; f < 64 || f > 66 {
		t.Errorf("first segment ended at frame %d, want about 65", f)
	}
}

func TestSegmenterChunkingInvariance(t *testing.T) {
	cfg := SegmenterConfig{SampleRate: 16000, Threshold: 0.5, MinSilence: 0.05, MaxSegment: 0.7, UpdateEvery: 0.25}
	x := toneSilence(0.3, 0.2, 1.6, 0.04, 0.5, 0.5, 0.013)
	whole := segment(t, cfg, x)
	if len(whole) < 10 {
		t.Fatalf("only %d events", len(whole))
	}
	for _, sizes := range [][]int{{1600}, {592}, {1}, {319, 321}} {
		if got := segment(t, cfg, x, sizes...); !reflect.DeepEqual(got, whole) {
			t.Fatalf("chunks %v: events differ\n got %+v\nwant %+v", sizes, got, whole)
		}
	}
}

func TestSegmenterMaxSegmentAndUpdates(t *testing.T) {
	cfg := SegmenterConfig{SampleRate: 16000, Threshold: 0.6, MinSilence: 0.2, MaxSegment: 1, UpdateEvery: 0.5}
	evs := segment(t, cfg, toneSilence(2.2, 1))
	want := []SegmentEventKind{SpeechStart, SegmentStart, SegmentUpdate, SegmentEnd, SegmentStart, SegmentUpdate, SegmentEnd, SegmentStart, SpeechEnd, SegmentEnd}
	if !reflect.DeepEqual(kinds(evs), want) {
		t.Fatalf("events %v, want %v", kinds(evs), want)
	}
	if !evs[3].Cut || !evs[6].Cut || evs[9].Cut {
		t.Error("the first two segments are cut, the last ends in silence")
	}
	for i, w := range [][2]float64{{0, 1}, {1, 2}, {2, 2.2}} {
		e := evs[[]int{3, 6, 9}[i]]
		if !near(e.Start, w[0]) || !near(e.End, w[1]) || e.Segment != i {
			t.Errorf("segment %d: %v–%v, want %v–%v", i, e.Start, e.End, w[0], w[1])
		}
	}
	if u := evs[2]; !near(u.End, 0.5) || u.Start != 0 {
		t.Errorf("update %+v", u)
	}
}

func TestSegmenterSilenceAndClicks(t *testing.T) {
	cfg := SegmenterConfig{SampleRate: 16000, Threshold: 0.6, MinSilence: 0.1}
	if evs := segment(t, cfg, make([]float32, 48000)); len(evs) != 0 {
		t.Fatalf("digital silence: %v", evs)
	}
	if evs := segment(t, cfg, toneSilence(0, 3)); len(evs) != 0 {
		t.Fatalf("faint noise: %v", evs)
	}
	click := toneSilence(0, 1, 0.015, 1) // shorter than the two frames that start speech
	if evs := segment(t, cfg, click); len(evs) != 0 {
		t.Fatalf("click: %v", evs)
	}
	dc := make([]float32, 16000)
	for i := range dc {
		dc[i] = 0.5
	}
	if evs := segment(t, cfg, dc); len(evs) != 0 {
		t.Fatalf("DC offset: %v", evs)
	}
}

func TestSegmenterThreshold(t *testing.T) {
	quiet := toneSilence(0.5, 1, 1, 0.5)
	for i := range quiet {
		quiet[i] *= 0.02 // tone at -43 dBFS
	}
	count := func(th float64) int {
		evs := segment(t, SegmenterConfig{SampleRate: 16000, Threshold: th, MinSilence: 0.1}, quiet)
		n := 0
		for _, e := range evs {
			if e.Kind == SegmentEnd {
				n++
			}
		}
		return n
	}
	if n := count(0.2); n != 2 {
		t.Errorf("threshold 0.2: %d segments, want 2", n)
	}
	if n := count(0.9); n != 0 {
		t.Errorf("threshold 0.9: %d segments, want 0", n)
	}
	for _, bad := range []SegmenterConfig{{SampleRate: 16000, Threshold: 1.1, MinSilence: 1}, {SampleRate: 16000, Threshold: math.NaN(), MinSilence: 1}, {SampleRate: 16000}, {SampleRate: 0, MinSilence: 1}, {SampleRate: 16000, MinSilence: 1, MaxSegment: -1}} {
		if _, err := NewSegmenter(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestVADNaN(t *testing.T) {
	v, _ := NewVAD(16000, 0.5)
	x := toneSilence(0.1)
	x[5] = float32(math.NaN())
	d := v.Write(x, nil)
	d = v.Write(toneSilence(0.1), d)
	if len(d) != 10 || !d[9] {
		t.Fatalf("a NaN sample must not poison the noise floor: %v", d)
	}
}
