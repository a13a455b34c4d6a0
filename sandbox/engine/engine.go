package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// SampleRate is the rate of every sample an engine receives: the rate speech models are
// trained at. Callers resample first (audio.Resample, audio.Resampler).
const SampleRate = 16000

// Word is one recognised word. Times are seconds from the start of the audio.
type Word struct {
	Text       string
	Start, End float64
	Confidence float64 // in (0, 1]
}

// Utterance is a stretch of speech on one channel.
type Utterance struct {
	Start, End float64 // seconds
	Confidence float64
	Channel    int
	Speaker    int
	Language   string
	Words      []Word
	Text       string
}

// Result is the transcript of pre-recorded audio.
type Result struct {
	Utterances []Utterance // ordered by start time, then channel
	Duration   float64     // seconds of audio transcribed
}

// Request is audio to transcribe.
type Request struct {
	Channels   [][]float32 // one slice a channel, at SampleRate, all of the same length
	SampleRate int         // must be SampleRate; 0 means SampleRate
	Languages  []string    // expected languages, first preferred; empty: the engine's default
	Vocabulary []string    // words to favour
	// Sidecar is a script of the expected transcript found next to the audio (<url>.json);
	// only the scripted engine reads it, others ignore it. Nil when there is none.
	Sidecar []byte
}

// Engine turns audio into words. Implementations must be safe for concurrent use: the sandbox
// runs several jobs and live sessions at once.
type Engine interface {
	// Name is the name the engine is registered under.
	Name() string
	// Transcribe transcribes pre-recorded audio. It stops early with ctx's error when ctx ends.
	Transcribe(ctx context.Context, req Request) (Result, error)
	// NewStream starts a live transcription. It does not wait for shared resources: an engine
	// with a limited pool reports that it is busy instead.
	NewStream(cfg StreamConfig) (Stream, error)
	// Close releases what the engine holds (decoders, models). Streams must be closed first.
	Close() error
}

// StreamConfig sets up a live transcription. Zero fields take the service's defaults.
type StreamConfig struct {
	Channels        int      // 1–8; default 1
	Endpointing     float64  // seconds of silence that end an utterance; default 0.05
	MaxUtterance    float64  // seconds after which an utterance is ended without silence; default 5
	SpeechThreshold float64  // 0–1, higher is less sensitive; 0 is a valid value, so set DefaultSpeechThreshold explicitly
	Languages       []string // as in Request
	Vocabulary      []string // as in Request
}

// Defaults of the live session parameters (provider-facts.md).
const (
	DefaultEndpointing     = 0.05
	DefaultMaxUtterance    = 5.0
	DefaultSpeechThreshold = 0.6
)

// withDefaults fills zero fields and checks the rest.
func (c StreamConfig) withDefaults() (StreamConfig, error) {
	if c.Channels == 0 {
		c.Channels = 1
	}
	if c.Endpointing == 0 {
		c.Endpointing = DefaultEndpointing
	}
	if c.MaxUtterance == 0 {
		c.MaxUtterance = DefaultMaxUtterance
	}
	switch {
	case c.Channels < 1 || c.Channels > 8:
		return c, fmt.Errorf("engine: %d channels; 1 to 8 are supported", c.Channels)
	case !(c.Endpointing > 0 && c.Endpointing <= 60):
		return c, fmt.Errorf("engine: endpointing %v s outside (0, 60]", c.Endpointing)
	case !(c.MaxUtterance > 0 && c.MaxUtterance <= 3600):
		return c, fmt.Errorf("engine: maximum utterance %v s outside (0, 3600]", c.MaxUtterance)
	case !(c.SpeechThreshold >= 0 && c.SpeechThreshold <= 1):
		return c, fmt.Errorf("engine: speech threshold %v outside 0–1", c.SpeechThreshold)
	}
	return c, nil
}

// EventKind names a live event.
type EventKind string

// Kinds of live events; the names are the service's message types.
const (
	EventSpeechStart EventKind = "speech_start"
	EventSpeechEnd   EventKind = "speech_end"
	EventPartial     EventKind = "partial_transcript"
	EventFinal       EventKind = "final_transcript"
)

// Event is something a Stream noticed.
type Event struct {
	Kind    EventKind
	Channel int
	// Time is when speech started or ended (speech events), seconds since the stream began.
	Time float64
	// UtteranceID numbers the utterances of a stream from 0; the partials and the final of one
	// utterance share it (transcript events).
	UtteranceID int
	// Utterance holds the words so far (partial) or all of them (final).
	Utterance Utterance
}

// Stream transcribes live audio fed in pieces. Feeding the same samples cut differently gives
// the same events. A Stream is used by one goroutine at a time.
type Stream interface {
	// Feed takes the next samples, one slice a channel, at SampleRate, all of the same
	// length, and returns the events they caused.
	Feed(samples [][]float32) ([]Event, error)
	// Finish ends the audio: open utterances become finals. The stream is closed after.
	Finish() ([]Event, error)
	// Close abandons the stream and releases what it holds; it is safe after Finish.
	Close() error
}

// UnsupportedError reports a request that the engine cannot serve as asked, through a fault of
// the input (a malformed sidecar, audio in the wrong shape) rather than of the engine.
type UnsupportedError struct {
	Engine string
	Reason string
}

func (e *UnsupportedError) Error() string { return e.Engine + ": " + e.Reason }

func unsupported(engine, format string, args ...any) error {
	return &UnsupportedError{Engine: engine, Reason: fmt.Sprintf(format, args...)}
}

// checkChannels validates the shape of audio given to an engine.
func checkChannels(engine string, ch [][]float32) error {
	if len(ch) == 0 {
		return unsupported(engine, "no audio channels")
	}
	if len(ch) > 8 {
		return unsupported(engine, "%d channels; at most 8 are supported", len(ch))
	}
	for c := range ch {
		if len(ch[c]) != len(ch[0]) {
			return unsupported(engine, "channel %d has %d samples, channel 0 has %d", c, len(ch[c]), len(ch[0]))
		}
	}
	return nil
}

// Factory builds an engine. Engines that need settings (a model directory, a pool size) get
// them through the closure registered.
type Factory func() (Engine, error)

// Registry maps engine names to factories. It is a value the program builds, not package
// state, so tests and commands each choose their engines.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// NewRegistry returns a registry holding the engines built into this binary: "scripted",
// and "pocketsphinx" when built with the pocketsphinx tag.
func NewRegistry() *Registry {
	r := newScriptedRegistry()
	registerBuiltins(r)
	return r
}

// newScriptedRegistry holds the scripted engine alone, whatever the build tags.
func newScriptedRegistry() *Registry {
	r := &Registry{factories: map[string]Factory{}}
	_ = r.Register(ScriptedName, func() (Engine, error) { return NewScripted(ScriptedOptions{}), nil })
	return r
}

// Register adds an engine under a name; a name can be registered once.
func (r *Registry) Register(name string, f Factory) error {
	if name == "" || strings.TrimSpace(name) != name || f == nil {
		return fmt.Errorf("engine: register %q: a name without spaces and a factory are needed", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("engine: %q is already registered", name)
	}
	r.factories[name] = f
	return nil
}

// New builds the engine registered under name.
func (r *Registry) New(name string) (Engine, error) {
	r.mu.RLock()
	f, ok := r.factories[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("engine: unknown engine %q; available: %s", name, strings.Join(r.Names(), ", "))
	}
	e, err := f()
	if err != nil {
		return nil, fmt.Errorf("engine: start %q: %w", name, err)
	}
	return e, nil
}

// Names lists the registered engines, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
