package engine

import "fmt"

// PocketsphinxName is the name of the pocketsphinx engine in a Registry. The engine is built
// only with the build tag "pocketsphinx" (it needs cgo and Debian's libpocketsphinx-dev);
// Registry.Names tells whether this binary has it.
const PocketsphinxName = "pocketsphinx"

// DefaultPocketsphinxModel is where Debian's pocketsphinx-en-us package installs the US
// English model: the acoustic model in en-us/, the trigram language model en-us.lm.bin and
// the pronunciation dictionary cmudict-en-us.dict.
const DefaultPocketsphinxModel = "/usr/share/pocketsphinx/model/en-us"

// PocketsphinxOptions configure the pocketsphinx engine; zero fields take the defaults.
type PocketsphinxOptions struct {
	// ModelDir holds en-us/, en-us.lm.bin and cmudict-en-us.dict (default
	// DefaultPocketsphinxModel). HMM, LM and Dict override one path each.
	ModelDir      string
	HMM, LM, Dict string
	// Decoders is the size of the decoder pool (default runtime.NumCPU()). Each decoder holds
	// its own copy of the models, about 90 MiB; a pre-recorded job takes one, a live stream
	// one a channel.
	Decoders int
	// Endpointing is the pause, in seconds, that splits pre-recorded audio into utterances
	// (default 0.3: pauses between sentences, not between words).
	Endpointing float64
	// MaxChunk is the longest stretch of pre-recorded audio decoded as one utterance, in
	// seconds (default 30): longer speech without such a pause is cut at its longest shorter
	// pause, because the decoder's lattice grows with the utterance.
	MaxChunk float64
	// SpeechThreshold is the voice activity threshold (0–1, higher is less sensitive) used to
	// find speech in pre-recorded audio; 0 takes the default, 0.4. Live streams use their own
	// StreamConfig.SpeechThreshold.
	SpeechThreshold float64
	// ExtraArgs are more decoder flags, in pocketsphinx's command-line form, e.g.
	// {"-beam", "1e-60"}. An unknown flag makes the engine fail to start.
	ExtraArgs []string
	// Logf receives notes, such as a custom vocabulary word skipped for want of a
	// pronunciation. Nil discards them.
	Logf func(format string, args ...any)
}

// BusyError reports that every decoder of the pool is in use, so a live stream cannot start
// now. NewStream returns it rather than wait, as the Engine interface requires.
type BusyError struct {
	Engine string
	Needed int // decoders the stream needs (one a channel)
	Size   int // decoders in the pool
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%s: busy: all %d decoders are in use (a stream needs %d); retry later or raise the pool size", e.Engine, e.Size, e.Needed)
}
