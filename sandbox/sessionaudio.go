package sandbox

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/sandbox/engine"
)

// audioLocked decodes one chunk, feeds the engine, acknowledges the chunk and emits what the
// engine recognised. It reports true when the session reached its maximum duration.
func (sess *session) audioLocked(chunk []byte) bool {
	if len(chunk) >= maxFrameBytes {
		sess.nackLocked(api.MessageAudioChunk, "audio chunk exceeds 1 MiB: send about 100 ms per chunk")
		return false
	}
	startByte := sess.bytesIn
	startTime := sess.decoder.Seconds()
	frames, err := sess.decoder.Write(chunk)
	if err != nil {
		sess.nackLocked(api.MessageAudioChunk, "audio chunk could not be decoded: "+err.Error())
		return false
	}
	sess.bytesIn += int64(len(chunk))
	sess.recordAudioLocked(frames) // before resampling, at the client's rate
	for ch := range frames {
		frames[ch] = sess.resamplers[ch].Process(frames[ch])
	}
	events, err := sess.stream.Feed(frames)
	ack := api.AudioChunkAckData{
		ByteRange: [2]int64{startByte, sess.bytesIn},
		TimeRange: [2]float64{round3(startTime), round3(sess.decoder.Seconds())},
	}
	sess.emitLocked(api.MessageAudioChunk, ack, api.Bool(true))
	sess.tail.add(chunk, ackMark{byteEnd: ack.ByteRange[1], timeEnd: ack.TimeRange[1]})
	if err != nil {
		sess.emitErrorLocked("speech engine failed: " + err.Error())
		return false
	}
	sess.engineEventsLocked(events)
	if limit := sess.srv.cfg.MaxLiveDuration; sess.decoder.Seconds() >= limit.Seconds() {
		sess.emitErrorLocked(fmt.Sprintf("session reached its maximum duration of %s: recording stopped", limit))
		return true
	}
	return false
}

// engineEventsLocked turns the engine's speech events and transcripts into messages, with the
// realtime add-ons after each final.
func (sess *session) engineEventsLocked(events []engine.Event) {
	for _, ev := range events {
		switch ev.Kind {
		case engine.EventSpeechStart:
			sess.emitLocked(api.MessageSpeechStart, api.SpeechEventData{Time: round3(ev.Time), Channel: ev.Channel}, nil)
		case engine.EventSpeechEnd:
			sess.emitLocked(api.MessageSpeechEnd, api.SpeechEventData{Time: round3(ev.Time), Channel: ev.Channel}, nil)
		case engine.EventPartial, engine.EventFinal:
			final := ev.Kind == engine.EventFinal
			utt := sess.utteranceLocked(ev.Utterance)
			if final && len(utt.Words) == 0 {
				continue
			}
			id := sess.utteranceID(ev.UtteranceID)
			sess.emitLocked(api.MessageTranscript, api.TranscriptData{ID: id, IsFinal: final, Utterance: utt}, nil)
			if final {
				sess.finals = append(sess.finals, utt)
				sess.realtimeAddonsLocked(id, utt)
			}
		}
	}
}

// utteranceID makes the engine's per-session utterance number a stable id shared by the
// partials and the final of one utterance.
func (sess *session) utteranceID(n int) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(sess.id+"/"+strconv.Itoa(n))).String()
}

func (sess *session) utteranceLocked(u engine.Utterance) api.Utterance {
	t := toTranscription(engine.Result{Utterances: []engine.Utterance{u}}, firstOr(liveLanguages(sess.req), "en"))
	utt := t.Utterances[0]
	if sess.speller != nil {
		utt = sess.speller.Utterance(utt)
	}
	return utt
}

// realtimeAddonsLocked answers the realtime add-ons the session asked for. The sandbox has no
// model for them, so each message carries an error, as the service does when an add-on fails.
func (sess *session) realtimeAddonsLocked(id string, utt api.Utterance) {
	rp := sess.req.RealtimeProcessing
	if rp == nil {
		return
	}
	unavailable := func(name string) json.RawMessage {
		b, _ := json.Marshal(api.MessageErrorBody{Message: name + " needs a model the sandbox does not have"})
		return b
	}
	if api.IsTrue(rp.Translation) && rp.TranslationConfig != nil {
		for _, target := range rp.TranslationConfig.TargetLanguages {
			sess.emitWithErrorLocked(api.MessageTranslation, api.TranslationData{
				UtteranceID: id, Utterance: utt, OriginalLanguage: utt.Language, TargetLanguage: target,
				TranslatedUtterance: api.Utterance{Start: utt.Start, End: utt.End, Channel: utt.Channel, Language: target, Words: []api.Word{}},
			}, unavailable("translation"))
		}
	}
	if api.IsTrue(rp.NamedEntityRecognition) {
		sess.emitWithErrorLocked(api.MessageNamedEntityRecognition, api.NamedEntityData{
			UtteranceID: id, Utterance: utt, Results: []api.NamedEntity{},
		}, unavailable("named_entity_recognition"))
	}
	if api.IsTrue(rp.SentimentAnalysis) {
		sess.emitWithErrorLocked(api.MessageSentimentAnalysis, api.SentimentData{
			UtteranceID: id, Utterance: utt, Results: []api.Sentiment{},
		}, unavailable("sentiment_analysis"))
	}
}
