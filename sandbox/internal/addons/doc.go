// Package addons computes the add-on results of the sandbox from a finished transcription, the
// way the service fills them, without any speech or language model: Apply for a pre-recorded
// job, ApplyLive for the post-processing of a live session, and one exported function per
// add-on for callers that need a single one.
//
// Computed for real:
//   - custom_spelling (Speller): whole-word, case-insensitive, multi-word variants; rewrites
//     words (times kept), utterance texts and the full transcript.
//   - sentences (SplitSentences): at . ? ! in punctuated transcripts, else at pauses of
//     SentencePause with a capital and a full stop added; in result.sentences and, as a
//     one-element array holding the same envelope, in transcription.sentences.
//   - subtitles (Cues, RenderSRT, RenderVTT, Subtitles): greedy rows under subtitles_config.
//   - display_mode (DisplayMode), diarization (Diarize): from the engine's speakers.
//   - summarization (Summarize), chapterization (Chapterize): extractive, by word frequency
//     over an English stopword list.
//   - name_consistency: a successful no-op whose results are the full transcript.
//
// Add-ons that need a model (translation, named_entity_recognition, sentiment_analysis,
// moderation, audio_to_llm, structured_data_extraction, speaker_reidentification) come back as
// failed envelopes with status 501 and exception NotAvailableInSandbox; the job is still done.
//
// Every function is deterministic for a given input except exec_time, which is measured (pass
// Options.Now to pin it), and none changes its arguments.
package addons
