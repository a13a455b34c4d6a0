#!/usr/bin/env python3
"""Generates the demo's sample recording with flite, and the scripted engine's sidecar.

Run from the repository root; needs flite (Debian's package). Writes
cmd/scribehook/demodata/sample.wav and sample.wav.json.

- Voice: flite's "slt", a 16 kHz voice. The pocketsphinx en-us model is trained on 16 kHz
  speech; the default 8 kHz voice ("kal") upsampled to 16 kHz lacks the upper band and was
  transcribed as nonsense.
- Words: every word is in pocketsphinx's dictionary (cmudict-en-us.dict) except those of
  VOCABULARY, which the demo passes as custom_vocabulary so that the engine can recognise them.
- Timing: one phrase per utterance, each cut to its speech (flite's own leading and trailing
  pauses dropped) and separated by PAUSE of digital silence, so that the sample stays small
  (about 400 KB) and every pause ends an utterance (the demo's live endpointing is 0.3 s).
- Sidecar: each word's start and end are those flite synthesised it at (flite -psdur gives the
  end of every phone; a word spans its phones), not estimates.
"""
import json, os, re, struct, subprocess, tempfile, wave

PHRASES = [
    "Welcome to scribehook.",
    "Callbacks arrive, are stored, and become subtitles.",
    "Live messages are forwarded to your other systems.",
    "Nothing is lost and nothing is duplicated.",
]
# Words of PHRASES that pocketsphinx's dictionary lacks; cmd/scribehook/demo.go sends the same
# list as the jobs' custom vocabulary (a test checks that they agree).
VOCABULARY = ["scribehook", "callbacks"]
# flite's pronunciations of words its lexicon lacks, where its letter-to-sound rules get them
# wrong: it says "kal-backs" (k ae l b ae k s), which neither a listener nor pocketsphinx
# expects (the vocabulary's pronunciation comes from "call" + "backs"). flite -add_lex format.
LEXICON = {"callbacks": "k ao1 l b ae1 k s"}
VOICE, RATE = "slt", 16000
LEAD, PAUSE, TAIL = 0.3, 0.65, 0.3  # seconds of silence before, between and after the phrases
MARGIN = 0.03  # seconds kept around flite's first and last phone: the onset's and release's edges
out_dir = "cmd/scribehook/demodata"


lex_file = tempfile.NamedTemporaryFile("w", suffix=".lex", delete=False)
lex_file.write("".join("%s : %s\n" % kv for kv in LEXICON.items()))
lex_file.close()


def flite(text, out, *opts):
    try:
        return subprocess.run(["flite", "-voice", VOICE, "-add_lex", lex_file.name, *opts, "-t", text, out],
                              check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as e:
        raise SystemExit("flite failed: %s" % e.stderr)


def segments(text, wav_path):
    """Synthesises text into wav_path; returns its phones as (phone, start, end) in seconds."""
    segs, start = [], 0.0
    for tok in flite(text, wav_path, "-psdur").split():
        ph, end = tok.rsplit(":", 1)
        segs.append((ph, start, float(end)))
        start = float(end)
    return segs


def phones(word):
    """The phones flite says word with, alone (pauses excluded)."""
    return [p for p in flite(word, "none", "-ps").split() if p != "pau"]


samples, utterances = [0] * round(LEAD * RATE), []
for text in PHRASES:
    words = re.findall(r"[A-Za-z']+", text)
    with tempfile.TemporaryDirectory() as d:
        raw = os.path.join(d, "p.wav")
        segs = segments(text, raw)
        with wave.open(raw) as w:
            assert (w.getsampwidth(), w.getnchannels(), w.getframerate()) == (2, 1, RATE), "flite voice %s is not 16 kHz mono 16-bit" % VOICE
            pcm = struct.unpack("<%dh" % w.getnframes(), w.readframes(w.getnframes()))
    speech = [s for s in segs if s[0] != "pau"]
    # Words are cut from the phrase's phones by the number of phones each has alone; flite's
    # phrase-level rules could change that count, which the assertion would catch.
    counts = [len(phones(w)) for w in words]
    assert sum(counts) == len(speech), "%r: %d phones in the phrase, %d in its words" % (text, len(speech), sum(counts))
    cut_from = max(0, round((speech[0][1] - MARGIN) * RATE))
    cut_to = min(len(pcm), round((speech[-1][2] + MARGIN) * RATE))
    offset = len(samples) / RATE - cut_from / RATE  # the phrase's time 0 in the sample
    ws, i = [], 0
    for w, n in zip(words, counts):
        ws.append({"word": w, "start": round(offset + speech[i][1], 3), "end": round(offset + speech[i + n - 1][2], 3), "confidence": 0.95})
        i += n
    utterances.append({"start": ws[0]["start"], "end": ws[-1]["end"], "channel": 0, "speaker": 0, "words": ws})
    samples += pcm[cut_from:cut_to]
    samples += [0] * round((PAUSE if text != PHRASES[-1] else TAIL) * RATE)

os.unlink(lex_file.name)
with wave.open(os.path.join(out_dir, "sample.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(RATE)
    w.writeframes(struct.pack("<%dh" % len(samples), *samples))
with open(os.path.join(out_dir, "sample.wav.json"), "w") as f:
    json.dump({"utterances": utterances}, f, indent=1)
    f.write("\n")
print("sample: %.2f s at %d Hz (%s), %d utterances, %d bytes" % (
    len(samples) / RATE, RATE, VOICE, len(utterances), os.path.getsize(os.path.join(out_dir, "sample.wav"))))
