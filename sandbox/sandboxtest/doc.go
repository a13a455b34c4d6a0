// Package sandboxtest runs the transcription service in-process, on loopback, for the tests and
// examples of a program that uses the kit: a sandbox of the service (package sandbox) whose
// scripted engine transcribes a recording into the words of its JSON sidecar, so that results
// are known in advance, and a file server holding that recording for the service to fetch.
// Synthesize makes such a recording from sentences of text; it needs nothing installed (no
// speech synthesiser, no speech model): the WAV is a quiet tone and the sidecar decides the
// words.
//
//	rec, err := sandboxtest.Synthesize("talk.wav", "Hello there", "How are you")
//	if err != nil {
//		t.Fatal(err)
//	}
//	world := sandboxtest.NewWorld(t, sandbox.Config{APIKey: "test-key"}, rec)
//	cfg := configs.Default()
//	cfg.Service.BaseURL = world.Service.URL // the kit's service is the sandbox
//	// … then submit a job whose audio_url is world.Files.AudioURL
//
// The functions that take a testing.TB (NewService, NewFiles, NewWorld, LoadRecording) fail the
// test on error and close what they started at its end. The plain ones (StartService,
// StartFiles, StartWorld, ReadRecording, Synthesize) return an error and leave the Close to the
// caller, for examples and programs, which have no testing.TB.
//
// Everything runs on loopback: the sandbox is allowed to fetch from 127.0.0.0/8 (Loopback),
// which the service refuses by default, and to call back a kit listening there.
package sandboxtest
