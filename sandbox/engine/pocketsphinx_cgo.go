//go:build pocketsphinx

package engine

/*
#cgo pkg-config: pocketsphinx sphinxbase
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pocketsphinx.h>
#include <ps_search.h>
#include <sphinxbase/ngram_model.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/err.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/logmath.h>

// sphinxbase logs every step to stderr. Its -logfn flag swaps a process-wide FILE* and closes
// the old one, which races with decoders logging on other threads; a callback set once does
// not. Errors still reach stderr, the chatter does not.
static void sh_log(void *user, err_lvl_t lvl, const char *fmt, ...) {
	va_list ap;
	if (lvl < ERR_ERROR) return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
static pthread_once_t sh_log_once = PTHREAD_ONCE_INIT;
static void sh_log_init(void) {
	err_set_callback(sh_log, NULL);
	err_set_logfp(NULL); // the configuration dump writes to the FILE* directly
}

// sh_decoder is a decoder and the cepstral mean it started with, so that every live stream
// can start from the same state whatever the decoder decoded before.
typedef struct {
	ps_decoder_t *ps;
	mfcc_t *cmninit;
	cmn_type_t cmn_type; // the model's CMN (feat.params)
} sh_decoder;

// cmd_ln_init is variadic, which cgo cannot call: parse an argv instead.
static sh_decoder *sh_new(int argc, char **argv) {
	pthread_once(&sh_log_once, sh_log_init);
	cmd_ln_t *cfg = cmd_ln_parse_r(NULL, ps_args(), argc, argv, TRUE);
	if (cfg == NULL) return NULL;
	ps_decoder_t *ps = ps_init(cfg);
	cmd_ln_free_r(cfg); // the decoder holds its own reference
	if (ps == NULL) return NULL;
	sh_decoder *d = calloc(1, sizeof *d);
	if (d == NULL) { ps_free(ps); return NULL; }
	feat_t *f = ps_get_feat(ps);
	d->ps = ps;
	d->cmn_type = f->cmn;
	d->cmninit = malloc(sizeof(mfcc_t) * f->cmn_struct->veclen);
	if (d->cmninit == NULL) { ps_free(ps); free(d); return NULL; }
	memcpy(d->cmninit, f->cmn_struct->cmn_mean, sizeof(mfcc_t) * f->cmn_struct->veclen);
	return d;
}

static void sh_free(sh_decoder *d) {
	ps_free(d->ps);
	free(d->cmninit);
	free(d);
}

// sh_reset_cmn restarts cepstral mean normalisation from the model's initial mean. The model
// asks for batch CMN (the mean of each whole utterance), which fails on short utterances: a
// single word comes out as noise. Live CMN keeps a running mean, carried from utterance to
// utterance, which also lets audio be decoded as it arrives. Each job and stream restarts it,
// so that results do not depend on what the decoder heard before.
static void sh_reset_cmn(sh_decoder *d) {
	feat_t *f = ps_get_feat(d->ps);
	if (d->cmn_type == CMN_NONE) return;
	f->cmn = CMN_LIVE;
	cmn_live_set(f->cmn_struct, d->cmninit);
}

// sh_start opens an utterance. ps_start_stream first: without it the decoder carries stream
// state (frame counts, noise statistics) from utterance to utterance, and after about 100 s of
// audio decoded in pieces it recognises nothing at all, for good (measured here).
static int sh_start(sh_decoder *d) {
	ps_start_stream(d->ps);
	return ps_start_utt(d->ps);
}

// sh_process feeds samples in blocks of a fixed size, so that the decoder sees the same
// sequence of calls however the audio arrived: live CMN updates its mean at the end of a call,
// so the results depend on where calls begin and end.
static int sh_process(sh_decoder *d, const int16 *pcm, size_t n, size_t block) {
	for (size_t i = 0; i < n; i += block) {
		size_t m = n - i < block ? n - i : block;
		if (ps_process_raw(d->ps, pcm + i, m, 0, 0) < 0) return -1;
	}
	return 0;
}

// sh_seg_conf is the word's posterior probability, a log in the decoder's base. It is
// computed only after ps_end_utt, and is 0 (probability 1) before.
static double sh_seg_conf(sh_decoder *d, ps_seg_t *seg) {
	int32 ascr, lscr, lback;
	return logmath_exp(ps_get_logmath(d->ps), ps_seg_prob(seg, &ascr, &lscr, &lback));
}
// sh_add_word adds a word to the dictionary and the language model. ps_add_word alone gives
// it the probability of a uniform distribution over the vocabulary (1 in 134,000), too low for
// it ever to be recognised: the word enters the language model first with weight times that
// (ps_add_word then leaves it, as a duplicate). A search without a language model (a grammar)
// takes the word in the dictionary only.
static int sh_add_word(sh_decoder *d, const char *word, const char *phones, float weight, int update) {
	ngram_model_t *lm = ps_get_lm(d->ps, ps_get_search(d->ps));
	if (lm != NULL && ngram_model_add_word(lm, word, weight) < 0) return -1;
	return ps_add_word(d->ps, word, phones, update);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// psVocabularyWeight is the language model weight of a custom vocabulary word added to the
// dictionary, relative to a uniform distribution over the 134,000 words: about the unigram
// probability of a common word (1 in 130), enough for the decoder to pick it when the audio
// fits, not so much that it replaces words that sound alike.
const psVocabularyWeight = 1000

// psFrameRate is pocketsphinx's feature frame rate (-frate 100): segment frames are 10 ms.
const psFrameRate = 100

// psDecoder is one pocketsphinx decoder. It is used by one goroutine at a time: the pool hands
// it to one job or stream.
type psDecoder struct {
	d *C.sh_decoder
	// dirty is set when words were added to the dictionary: the decoder then no longer gives
	// the same results as a fresh one, so the pool frees it instead of reusing it.
	dirty bool
	inUtt bool
}

// rawWord is a decoder segment: a word (fillers included) with inclusive frame numbers.
type rawWord struct {
	text   string
	sf, ef int
	conf   float64
}

func newPSDecoder(args []string) (*psDecoder, error) {
	argv := make([]*C.char, len(args)+1) // NULL-terminated, as argv is
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	defer func() {
		for _, p := range argv[:len(args)] {
			C.free(unsafe.Pointer(p))
		}
	}()
	// argv is Go memory holding C pointers; C reads it during the call only.
	d := C.sh_new(C.int(len(args)), &argv[0])
	if d == nil {
		return nil, fmt.Errorf("pocketsphinx: the decoder did not start with %q (see the errors above)", args)
	}
	return &psDecoder{d: d}, nil
}

func (d *psDecoder) free() {
	if d.d != nil {
		C.sh_free(d.d)
		d.d = nil
	}
}

func (d *psDecoder) resetCMN() { C.sh_reset_cmn(d.d) }

func (d *psDecoder) start() error {
	if C.sh_start(d.d) < 0 {
		return errors.New("pocketsphinx: ps_start_utt failed")
	}
	d.inUtt = true
	return nil
}

// process feeds samples to the open utterance in blocks of block samples.
func (d *psDecoder) process(pcm []int16, block int) error {
	if len(pcm) == 0 {
		return nil
	}
	// The slice is pinned for the call; C keeps no pointer to it (the decoder copies the
	// features it computes).
	if C.sh_process(d.d, (*C.int16)(unsafe.Pointer(&pcm[0])), C.size_t(len(pcm)), C.size_t(block)) < 0 {
		return errors.New("pocketsphinx: ps_process_raw failed")
	}
	return nil
}

func (d *psDecoder) end() error {
	if !d.inUtt {
		return nil
	}
	d.inUtt = false
	if C.ps_end_utt(d.d.ps) < 0 {
		return errors.New("pocketsphinx: ps_end_utt failed")
	}
	return nil
}

// words returns the segments of the best hypothesis so far (during an utterance) or final
// (after end). Strings belong to the decoder, so they are copied at once.
func (d *psDecoder) words() []rawWord {
	var out []rawWord
	for seg := C.ps_seg_iter(d.d.ps); seg != nil; seg = C.ps_seg_next(seg) {
		var sf, ef C.int
		C.ps_seg_frames(seg, &sf, &ef)
		out = append(out, rawWord{
			text: C.GoString(C.ps_seg_word(seg)),
			sf:   int(sf), ef: int(ef),
			conf: float64(C.sh_seg_conf(d.d, seg)),
		})
	}
	// ps_seg_next frees the iterator when it returns NULL.
	return out
}

// lookup returns the pronunciation of a word in the dictionary.
func (d *psDecoder) lookup(word string) (string, bool) {
	cw := C.CString(word)
	defer C.free(unsafe.Pointer(cw))
	p := C.ps_lookup_word(d.d.ps, cw)
	if p == nil {
		return "", false
	}
	defer C.free(unsafe.Pointer(p)) // allocated for the caller
	return C.GoString(p), true
}

// addWord adds a word to the dictionary and the language model. update rebuilds the search,
// which is slow: pass it with the last word of a batch only.
func (d *psDecoder) addWord(word, phones string, update bool) error {
	cw, cp := C.CString(word), C.CString(phones)
	defer C.free(unsafe.Pointer(cw))
	defer C.free(unsafe.Pointer(cp))
	u := C.int(0)
	if update {
		u = 1
	}
	d.dirty = true
	if C.sh_add_word(d.d, cw, cp, psVocabularyWeight, u) < 0 {
		return fmt.Errorf("pocketsphinx: could not add %q /%s/ to the dictionary", word, phones)
	}
	return nil
}
