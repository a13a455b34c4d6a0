package subtitles_test

import (
	"fmt"
	"os"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/subtitles"
)

// Render SRT from a job's result: here one built in code, as a finished job's record
// (api.Job.Result) or a job.succeeded event carries it.
func ExampleRender() {
	speaker := func(n int) *int { return &n }
	words := func(start float64, text ...string) []api.Word {
		var ws []api.Word
		for _, w := range text {
			ws = append(ws, api.Word{Word: w, Start: start, End: start + 0.3, Confidence: 0.9})
			start += 0.4
		}
		return ws
	}
	result := &api.Result{Transcription: &api.Transcription{
		Languages: []string{"en"},
		Utterances: []api.Utterance{
			{Start: 0.5, End: 2.1, Speaker: speaker(0), Language: "en", Text: "Is the callback in?",
				Words: words(0.5, "Is", "the", "callback", "in?")},
			{Start: 3.0, End: 5.0, Speaker: speaker(1), Language: "en", Text: "Yes, and the subtitles are ready.",
				Words: words(3.0, "Yes,", "and", "the", "subtitles", "are", "ready.")},
		},
	}}

	// The profile's rules decide the cues: characters per line, reading speed, gaps.
	profile, err := subtitles.ProfileByName(subtitles.NetflixAdult)
	if err != nil {
		fmt.Println(err)
		return
	}
	tracks, err := subtitles.FromResult(result, profile)
	if err != nil {
		fmt.Println(err)
		return
	}
	// tracks[0] is the transcription; translations, if any, follow.
	if err := subtitles.Render(os.Stdout, tracks[0].Cues, subtitles.SRT, subtitles.Options{}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 1
	// 00:00:00,500 --> 00:00:02,000
	// Is the callback in?
	//
	// 2
	// 00:00:03,000 --> 00:00:05,300
	// Yes, and the subtitles are ready.
}

// Names for diarized speakers: a label at each turn in every format, the voice span in WebVTT.
func ExampleProfile_WithSpeakerNames() {
	spk := func(n int) *int { return &n }
	utts := []api.Utterance{
		{Speaker: spk(0), Words: []api.Word{{Word: "Welcome", Start: 1, End: 1.4}, {Word: "back.", Start: 1.5, End: 1.9}}},
		{Speaker: spk(1), Words: []api.Word{{Word: "Thanks.", Start: 4, End: 4.6}}},
	}
	p := subtitles.DefaultProfile().WithSpeakerNames(api.SpeakerNames{0: "Alice Martin", 1: "Bob Stone"})
	cues, _, err := subtitles.Segment(utts, p)
	if err != nil {
		panic(err)
	}
	if err := subtitles.Render(os.Stdout, cues, subtitles.VTT, subtitles.Options{}); err != nil {
		panic(err)
	}
	// Output:
	// WEBVTT
	//
	// 1
	// 00:00:01.000 --> 00:00:02.350
	// <v Alice Martin>Alice Martin: Welcome back.
	//
	// 2
	// 00:00:04.000 --> 00:00:04.900
	// <v Bob Stone>Bob Stone: Thanks.
}
