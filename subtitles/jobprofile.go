package subtitles

import "github.com/scribehook/scribehook/api"

// ForJob is p with the job's own subtitles_config applied over it (WithConfig): the rules
// serve rendered the job's subtitles with, which an export or a check of them must use too. A
// job whose request_params are absent or do not decode keeps p.
func (p Profile) ForJob(job *api.Job) Profile {
	params, err := job.PreRecordedParams()
	if err != nil || params == nil {
		return p
	}
	return p.WithConfig(params.SubtitlesConfig)
}
