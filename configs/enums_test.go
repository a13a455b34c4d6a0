package configs_test

import (
	"slices"
	"testing"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/subtitles"
)

// The configuration lists the allowed values of its enumerated keys itself: configs sits below
// the packages that implement them (docs/design.md, layers) and cannot take their lists. This
// test keeps each list in step with the package that gives the values their meaning.
func TestEnumerationsMatchTheirPackages(t *testing.T) {
	var formats []string
	for _, f := range subtitles.Formats() {
		formats = append(formats, string(f))
	}
	for _, tc := range []struct {
		key           string
		listed, knows []string
	}{
		{"subtitles.formats", configs.SubtitleFormats, formats},
		{"subtitles.profile", configs.Profiles, subtitles.ProfileNames()},
		{"sinks[].kind", configs.SinkKinds, []string{sinks.KindFile, sinks.KindWebhook, sinks.KindRedisStream, sinks.KindNATS, sinks.KindLog}},
		{"bus.driver", configs.BusDrivers, []string{configs.DefaultBusDriver, handlers.BusRedisStream, handlers.BusNATS}},
	} {
		if !slices.Equal(tc.listed, tc.knows) {
			t.Errorf("%s: configs allows %q, its package knows %q", tc.key, tc.listed, tc.knows)
		}
	}
}
