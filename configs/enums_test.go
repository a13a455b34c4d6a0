package configs_test

import (
	"slices"
	"testing"

	"github.com/scribehook/scribehook/configs"
	"github.com/scribehook/scribehook/handlers"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/store"
	_ "github.com/scribehook/scribehook/store/postgres" // the drivers, linked as a program links them
	_ "github.com/scribehook/scribehook/store/sqlite"
	"github.com/scribehook/scribehook/subtitles"
)

// The configuration lists the allowed values of most enumerated keys itself: configs sits below
// the packages that implement them (docs/design.md, layers) and cannot take their lists. This
// test keeps each list in step with the package that gives the values their meaning. The kinds
// of sinks are the exception: configs takes them from the registry (sinkkind), which every
// kind's package fills.
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
		{"sinks[].kind", sinks.Kinds(), []string{sinks.KindFile, sinks.KindWebhook, sinks.KindRedisStream, sinks.KindNATS, sinks.KindLog}},
		{"bus.driver", configs.BusDrivers, []string{configs.DefaultBusDriver, handlers.BusRedisStream, handlers.BusNATS}},
		{"store.driver", slices.Sorted(slices.Values(configs.StoreDrivers)), store.Drivers()},
	} {
		if !slices.Equal(tc.listed, tc.knows) {
			t.Errorf("%s: configs allows %q, its package knows %q", tc.key, tc.listed, tc.knows)
		}
	}
}
