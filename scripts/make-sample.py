#!/usr/bin/env python3
"""Generates the demo's sample recording with flite: one phrase per utterance, separated by
pauses, plus the scripted engine's sidecar with word times spread over each phrase's voiced
span (proportional to word length). Run from the repository root; writes
cmd/scribehook/demodata/sample.wav and sample.wav.json."""
import json, os, struct, subprocess, tempfile, wave

PHRASES = [
    "Welcome to scribehook.",
    "Callbacks arrive, are stored, and become subtitles.",
    "Live messages are forwarded to your other systems.",
    "Nothing is lost and nothing is duplicated.",
]
RATE, PAUSE = 8000, 0.7
out_dir = "cmd/scribehook/demodata"

def voiced_span(samples, rate):
    frame = rate // 50
    peak = max(abs(s) for s in samples) or 1
    idx = [i for i in range(0, len(samples), frame) if max(abs(s) for s in samples[i:i + frame]) > 0.05 * peak]
    return idx[0] / rate, (idx[-1] + frame) / rate

all_samples, utterances, t0 = [0] * int(0.5 * RATE), [], 0.5
for text in PHRASES:
    with tempfile.TemporaryDirectory() as d:
        raw = os.path.join(d, "p.wav")
        subprocess.run(["flite", "-t", text, "-o", raw], check=True)
        with wave.open(raw) as w:
            assert w.getsampwidth() == 2 and w.getnchannels() == 1
            src_rate = w.getframerate()
            frames = struct.unpack("<%dh" % w.getnframes(), w.readframes(w.getnframes()))
    # flite speaks at 8 kHz: repeat samples to 16 kHz (the engine resamples anyway).
    step = RATE // src_rate
    samples = [s for s in frames for _ in range(step)]
    start, end = voiced_span(samples, RATE)
    words = text.replace(",", "").replace(".", "").split()
    total = sum(len(w) for w in words)
    t, ws = t0 + start, []
    span = end - start
    for w in words:
        d = span * len(w) / total
        ws.append({"word": w, "start": round(t, 3), "end": round(t + d * 0.9, 3), "confidence": 0.95})
        t += d
    utterances.append({"start": ws[0]["start"], "end": ws[-1]["end"], "channel": 0, "speaker": 0, "words": ws})
    all_samples += samples + [0] * int(PAUSE * RATE)
    t0 += len(samples) / RATE + PAUSE

with wave.open(os.path.join(out_dir, "sample.wav"), "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(RATE)
    w.writeframes(struct.pack("<%dh" % len(all_samples), *all_samples))
with open(os.path.join(out_dir, "sample.wav.json"), "w") as f:
    json.dump({"utterances": utterances}, f, indent=1)
print("sample: %.1f s, %d utterances" % (len(all_samples) / RATE, len(utterances)))
