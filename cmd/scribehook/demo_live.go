package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/sandbox/audio"
	"github.com/scribehook/scribehook/sandbox/engine"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/submitter"
)

// The live part of the demo: a session set up the way `live` does it, streaming the sample
// over the WebSocket, and the wait for serve to store its callbacks.

// demoLiveResult is what the live step learnt.
type demoLiveResult struct {
	id       string
	finals   int              // final transcripts received over the WebSocket
	messages int              // the session's messages serve stored from its callbacks
	arts     []store.Artifact // the session's subtitles, which serve renders from its transcript
}

// live streams the sample to a live session and waits until serve has stored the session's
// callbacks. The result holds what is known so far, also on error.
func (w *demoWorld) live(ctx context.Context, realtime bool) (demoLiveResult, error) {
	live, err := demoLive(ctx, w.cfg, w.st, w.client, w.wav, w.format, realtime, w.sampleSeconds, w.eng.Name(), w.say)
	if err != nil {
		return live, err
	}
	w.say("   waiting for serve to store the session's callbacks…")
	liveRec, _, err := demoWaitJob(ctx, w.st, live.id, demoJobTimeout, w.say)
	if err != nil {
		return live, err
	}
	if liveRec.Job.Status != api.StatusDone {
		return live, fmt.Errorf("live session %s ended in %s: %w", live.id, liveRec.Job.Status, jobFailed(liveRec))
	}
	n, err := countLiveMessages(ctx, w.st, live.id)
	if err != nil {
		return live, err
	}
	live.messages = int(n)
	// A finished session has a transcript too, so serve renders its subtitles as well.
	if live.arts, err = w.st.Artifacts(ctx, live.id); err != nil {
		return live, fmt.Errorf("read the artifacts of live session %s: %w", live.id, err)
	}
	w.say("   session %s ended: %d final transcripts over the WebSocket; serve stored %d messages from its callbacks",
		live.id, live.finals, live.messages)
	return live, nil
}

// demoLive creates a live session whose callbacks go to serve (token minted and stored, job
// recorded, as `live` does), streams the sample over the WebSocket and prints each final
// transcript as it arrives.
func demoLive(ctx context.Context, cfg configs.Config, st store.Store, client *submitter.Client, wav []byte, f audio.Format,
	realtime bool, sampleSeconds float64, engineName string, say func(string, ...any)) (demoLiveResult, error) {
	var res demoLiveResult
	req := api.LiveRequest{
		Encoding: string(f.Encoding), SampleRate: api.Int(f.SampleRate), BitDepth: api.Int(f.BitDepth), Channels: api.Int(f.Channels),
		// The sample pauses about 0.75 s between sentences: 0.3 s of silence ends each
		// utterance there and not inside a sentence.
		Endpointing:    api.Float(0.3),
		LanguageConfig: &api.LanguageConfig{Languages: []string{"en"}},
		RealtimeProcessing: &api.RealtimeProcessing{
			CustomVocabulary: api.Bool(true), CustomVocabularyConfig: &api.CustomVocabularyConfig{Vocabulary: demoVocabularyTerms()},
		},
		CustomMetadata: json.RawMessage(`{"source":"scribehook demo"}`),
	}
	subm := &scribehook.Submitter{Store: st, Service: client, PublicURL: cfg.PublicURL}
	created, err := subm.StartLive(ctx, req, "")
	if err != nil {
		return res, fmt.Errorf("create the live session: %w", err)
	}
	res.id = created.ID
	pace := fmt.Sprintf("in real time (%.0f s; --fast skips the pacing)", sampleSeconds)
	if !realtime {
		pace = "as fast as possible"
	}
	say("\n3. live session %s: streaming the recording %s", created.ID, pace)
	if engineName == engine.ScriptedName {
		say("   (the scripted engine reads no script in live mode: its live words are made up, their timing follows the audio)")
	}
	var mu sync.Mutex // onMessage runs on the stream's reader goroutine
	var serviceErrs []string
	err = subm.Stream(ctx, created, bytes.NewReader(wav), submitter.StreamOptions{Realtime: realtime}, func(m api.LiveMessage) {
		switch {
		case m.Type == api.MessageError || m.HasError() || (m.Acknowledged != nil && !*m.Acknowledged):
			msg := m.ErrorMessage()
			if msg == "" {
				msg = "no message"
			}
			mu.Lock()
			serviceErrs = append(serviceErrs, fmt.Sprintf("%s: %s", m.Type, msg))
			mu.Unlock()
			say("   service error (%s): %s", m.Type, msg)
		case m.Type == api.MessageTranscript && m.TranscriptIsFinal():
			var d api.TranscriptData
			if m.DecodeData(&d) == nil {
				mu.Lock()
				res.finals++
				mu.Unlock()
				say("   final [%6.2f–%6.2f] %s", d.Utterance.Start, d.Utterance.End, d.Utterance.Text)
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		return res, fmt.Errorf("live session %s: %w", created.ID, err)
	}
	if len(serviceErrs) > 0 {
		return res, fmt.Errorf("live session %s: the service reported %s", created.ID, strings.Join(serviceErrs, "; "))
	}
	if res.finals == 0 {
		return res, fmt.Errorf("live session %s: no final transcript arrived over the WebSocket", created.ID)
	}
	return res, nil
}
