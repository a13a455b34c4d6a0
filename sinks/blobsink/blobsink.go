// Package blobsink is the blob kind of sink: each event and its artifacts written as objects
// of a bucket through gocloud.dev/blob. Importing it registers the kind (sinks.RegisterKind)
// and links the S3 client; a program that does not import it does not:
//
//	import _ "github.com/scribehook/scribehook/sinks/blobsink"
//
// Its configuration entry reads url (the bucket, required), prefix (the keys' prefix, "{kind}"
// and "{type}" replaced by the event's), raw (also write the job's raw result) and allow
// (private hosts the S3 endpoint may be on). Buckets:
//
//	s3://BUCKET?region=R                    AWS S3
//	s3://BUCKET?endpoint=http://HOST:PORT&use_path_style=true&region=R
//	                                         an S3-compatible server (MinIO, seaweedfs, Ceph)
//	file:///ABSOLUTE/DIR                     a local directory (temporary file and rename)
//
// The s3 query parameters are gocloud.dev's names, those of them this package reads: region,
// endpoint, use_path_style, disable_https, profile, anonymous, request_checksum_calculation,
// response_checksum_validation; any other is refused. The URL never carries a secret: user
// info is refused. The keys are the sink's own (Spec.Keys, from the entry's access_key_env,
// secret_key_env and session_token_env) or, without them, the AWS SDK's usual sources
// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, shared files, web identity, instance
// metadata). Every request goes through the sink's address guard, the credential sources'
// too: an instance role needs allow: [169.254.169.254]. gs:// and azblob:// are not linked
// (their clients would add megabytes to the binary and dial without the guard).
//
// The layout mirrors the file sink's, under <prefix>/<job_id> (<job_id> is sinks.PathSegment
// of the id):
//
//	<prefix>/<job_id>/events/<created>-<type>-<event id>.json   every event (api.EncodeEvent)
//	<prefix>/<job_id>/transcript.txt                             job.succeeded with a transcript
//	<prefix>/<job_id>/result.json                                job.succeeded's result, raw: true
//	<prefix>/<job_id>/<name>                                     each file of subtitles.ready
//
// An object is written whole on Close (S3 PUT; fileblob writes a temporary file and renames
// it), so a reader sees the old content or the new. Keys and bytes depend only on the event:
// the same event delivered again writes the same objects with the same bytes, each carrying
// the event's id as metadata scribehook-event-id. Every connection to the S3 endpoint goes
// through the address guard, as a webhook's does.
package blobsink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/sirupsen/logrus"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"

	"github.com/scribehook/scribehook/api"
	"github.com/scribehook/scribehook/internal/netguard"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/sinkkind"
)

// Kind is the name of the kind, the value of a sinks entry's kind key.
const Kind = "blob"

// Names of the objects under <prefix>/<job_id>, as the file sink names its files.
const (
	eventsDir      = "events"
	transcriptName = "transcript.txt"
	resultName     = "result.json"
)

// MetadataEventID is the metadata key of every object: the id of the event that wrote it.
const MetadataEventID = "scribehook-event-id"

func init() {
	sinks.RegisterKind(sinks.Kind{
		Kind: sinkkind.Kind{
			Name: Kind,
			Validate: func(e sinkkind.Entry) []sinkkind.Problem {
				if _, err := parseURL(e.URL); err != nil {
					return []sinkkind.Problem{{Key: "url", Rule: err.Error()}}
				}
				return nil
			},
		},
		New: func(spec sinks.Spec, deps sinks.Deps) (sinks.Sink, error) {
			s, err := New(spec, deps)
			if err != nil {
				return nil, err // a nil *Sink must not become a non-nil sinks.Sink
			}
			return s, nil
		},
	})
}

// parseURL checks a bucket URL: a scheme this package opens, a bucket, no user info. Its
// errors never quote the URL's query.
func parseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New(`is required for a blob sink, e.g. "s3://bucket?region=eu-west-1" or "file:///var/lib/scribehook/bucket"`)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("is not a URL: %w", netguard.StripURLError(err))
	}
	if u.User != nil {
		return nil, errors.New("must not carry credentials: give S3 keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	switch u.Scheme {
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("names no bucket (%s)", netguard.RedactURL(raw))
		}
		if _, err := parseS3Params(u.Query()); err != nil {
			return nil, err
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" || !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("must be file:///absolute/directory (got %s)", netguard.RedactURL(raw))
		}
		if u.RawQuery != "" {
			return nil, errors.New("of a file bucket takes no query parameters")
		}
	case "gs", "azblob":
		return nil, fmt.Errorf("scheme %s:// is not linked: use s3:// (S3 and S3-compatible servers) or file://", u.Scheme)
	default:
		return nil, fmt.Errorf("must be an s3:// or file:// bucket URL (got scheme %q)", u.Scheme)
	}
	return u, nil
}

// Sink writes events and their artifacts to a bucket.
type Sink struct {
	name   string
	bucket *blob.Bucket
	where  string // the bucket URL without its query, for errors and logs
	prefix string
	raw    bool
	log    logrus.FieldLogger
}

// New builds a blob sink from spec: URL is the bucket, Prefix the keys' prefix, Raw whether
// the raw result is written, Allow the private hosts the S3 endpoint may be on. Nothing is
// dialled before the first delivery.
func New(spec sinks.Spec, deps sinks.Deps) (*Sink, error) {
	deps = deps.WithDefaults()
	u, err := parseURL(spec.URL)
	if err != nil {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "URL", Err: err}
	}
	prefix, err := cleanPrefix(spec.Prefix)
	if err != nil {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "Prefix", Err: err}
	}
	guard, err := netguard.New(spec.Allow)
	if err != nil {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "Allow", Err: err}
	}
	var bucket *blob.Bucket
	if k := spec.Keys; (k.AccessKeyID == "") != (k.SecretAccessKey == "") || (k.SessionToken != "" && k.AccessKeyID == "") {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "Keys", Err: errors.New("need both an access key id and a secret access key (a session token only with them)")}
	}
	if u.Scheme == "file" {
		if !spec.Keys.IsZero() {
			return nil, &sinks.SpecError{Sink: spec.Name, Field: "Keys", Err: errors.New("are for s3:// buckets, not file://")}
		}
		bucket, err = fileblob.OpenBucket(u.Path, &fileblob.Options{CreateDir: true, NoTempDir: true})
	} else {
		bucket, err = openS3(u, spec.Keys, guard, deps)
	}
	if err != nil {
		return nil, &sinks.SpecError{Sink: spec.Name, Field: "URL", Err: err}
	}
	return &Sink{
		name: spec.Name, bucket: bucket, where: netguard.RedactURL(spec.URL), prefix: prefix, raw: spec.Raw,
		log: deps.Logger.WithField("sink", spec.Name),
	}, nil
}

// openS3 opens an s3:// bucket with an HTTP client whose every connection the guard checks.
func openS3(u *url.URL, keys sinks.StaticKeys, guard *netguard.Guard, deps sinks.Deps) (*blob.Bucket, error) {
	p, err := parseS3Params(u.Query())
	if err != nil {
		return nil, err
	}
	if p.anonymous && !keys.IsZero() {
		return nil, errors.New("query parameter anonymous=true and static keys exclude each other")
	}
	client, err := newS3Client(context.Background(), p, keys, guardedClient(guard, deps))
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", netguard.RedactURL(u.String()), err)
	}
	return s3blob.OpenBucket(context.Background(), client, u.Host, &s3blob.Options{
		RequestChecksumCalculation: p.requestChecksum,
	})
}

// guardedClient is the AWS SDK's own HTTP client (which the SDK can still configure: a CA
// bundle from AWS_CA_BUNDLE) with every dial through the guard and no proxy, which would be
// the address dialled instead of the target.
func guardedClient(guard *netguard.Guard, deps sinks.Deps) *awshttp.BuildableClient {
	dialer := netguard.NewDialer(guard, deps.Resolver)
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		if deps.Transport != nil && deps.Transport.TLSClientConfig != nil {
			tr.TLSClientConfig = deps.Transport.TLSClientConfig.Clone()
		}
		tr.Proxy = nil
		tr.DialContext = dialer.DialContext
		// Any of these would take over dials from DialContext and skip the guard.
		tr.Dial, tr.DialTLSContext, tr.DialTLS = nil, nil, nil
	})
}

// cleanPrefix checks the keys' prefix: relative, no empty, "." or ".." segment.
func cleanPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("%q has an empty, . or .. segment", p)
		}
	}
	if strings.ContainsAny(p, "\\\x00") {
		return "", fmt.Errorf("%q contains a backslash or NUL", p)
	}
	return p, nil
}

// Name implements sinks.Sink.
func (s *Sink) Name() string { return s.name }

// Close implements sinks.Sink: it releases the bucket's client.
func (s *Sink) Close() error {
	if err := s.bucket.Close(); err != nil {
		return fmt.Errorf("close bucket %s: %w", s.where, err)
	}
	return nil
}

// object is one object to write.
type object struct {
	key         string
	contentType string
	body        []byte
}

// Deliver writes ev's objects: the artifacts, then the event (so that an event object
// announces artifacts that exist). Events that can never be written (no job id, data that does
// not decode) fail permanently; the bucket's errors are retried.
func (s *Sink) Deliver(ctx context.Context, ev api.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	objs, err := s.objects(ev)
	if err != nil {
		return &sinks.Failure{Err: err, Permanent: true}
	}
	for _, o := range objs {
		if err := s.put(ctx, ev.ID, o); err != nil {
			return err
		}
	}
	s.log.WithFields(logrus.Fields{"job_id": ev.JobID, "event_id": ev.ID, "objects": len(objs)}).Debug("event written")
	return nil
}

// put writes one object whole: gocloud uploads it on Close, and a write cancelled or failed
// before leaves nothing.
func (s *Sink) put(ctx context.Context, eventID string, o object) error {
	w, err := s.bucket.NewWriter(ctx, o.key, &blob.WriterOptions{
		ContentType: o.contentType,
		Metadata:    map[string]string{MetadataEventID: eventID},
	})
	if err != nil {
		return fmt.Errorf("write %s to %s: %w", o.key, s.where, netguard.StripURLError(err))
	}
	if _, err := w.Write(o.body); err != nil {
		_ = w.Close()
		return fmt.Errorf("write %s to %s: %w", o.key, s.where, netguard.StripURLError(err))
	}
	if err := w.Close(); err != nil {
		err = netguard.StripURLError(err)
		var blocked *netguard.BlockedAddressError
		if errors.As(err, &blocked) {
			// Retrying changes nothing until someone changes allow; the dead letter can be
			// replayed then.
			return &sinks.Failure{Err: fmt.Errorf("write %s to %s: %w", o.key, s.where, err), Permanent: true}
		}
		return fmt.Errorf("write %s to %s: %w", o.key, s.where, err)
	}
	return nil
}

// objects lists the objects Deliver writes for ev, keys and bytes, in the order it writes
// them; the error says why ev can never be written.
func (s *Sink) objects(ev api.Event) ([]object, error) {
	if ev.JobID == "" {
		return nil, errors.New("event has no job id to name its folder")
	}
	if ev.ID == "" {
		return nil, errors.New("event has no id to name its object")
	}
	base := path.Join(s.expand(ev), sinks.PathSegment(ev.JobID))
	var objs []object
	switch ev.Type {
	case api.EventJobSucceeded:
		text, err := sinks.TranscriptText(ev.Data)
		if err != nil {
			return nil, fmt.Errorf("job.succeeded data: %w", err)
		}
		if text != "" {
			objs = append(objs, object{path.Join(base, transcriptName), "text/plain; charset=utf-8", []byte(text)})
		}
		if s.raw {
			var job struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(ev.Data, &job); err != nil {
				return nil, fmt.Errorf("job.succeeded data: %w", err)
			}
			if len(job.Result) > 0 && string(job.Result) != "null" {
				objs = append(objs, object{path.Join(base, resultName), "application/json", job.Result})
			}
		}
	case api.EventSubtitlesReady:
		subs, err := subtitleObjects(ev, base)
		if err != nil {
			return nil, err
		}
		objs = append(objs, subs...)
	}
	body, err := api.EncodeEvent(&ev, false)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return append(objs, object{path.Join(base, eventsDir, sinks.EventFileName(ev)), "application/json", body}), nil
}

// expand is the prefix with {kind} and {type} replaced by ev's, each a safe segment.
func (s *Sink) expand(ev api.Event) string {
	if !strings.Contains(s.prefix, "{") {
		return s.prefix
	}
	kind := string(ev.Kind)
	if kind == "" {
		kind = "none"
	}
	return strings.NewReplacer("{kind}", sinks.PathSegment(kind), "{type}", sinks.PathSegment(ev.Type)).Replace(s.prefix)
}

// subtitleObjects are the files of a subtitles.ready event, under base by their names.
func subtitleObjects(ev api.Event, base string) ([]object, error) {
	var data sinks.SubtitlesReadyData
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return nil, fmt.Errorf("subtitles.ready data: %w", err)
	}
	if data.JobID != "" && data.JobID != ev.JobID {
		return nil, fmt.Errorf("subtitles.ready data: job_id %q differs from the event's %q", data.JobID, ev.JobID)
	}
	seen := map[string]bool{}
	var out []object
	for i, f := range data.Files {
		switch {
		case f.Name == "" || f.Name == "." || f.Name == ".." || strings.HasPrefix(f.Name, ".") ||
			strings.ContainsAny(f.Name, "/\\\x00") || len(f.Name) > 200:
			return nil, fmt.Errorf("subtitles.ready data: files[%d].name %q is not a plain file name", i, f.Name)
		case f.Name == eventsDir || f.Name == transcriptName || f.Name == resultName:
			return nil, fmt.Errorf("subtitles.ready data: files[%d].name %q is reserved by the blob sink", i, f.Name)
		case seen[f.Name]:
			return nil, fmt.Errorf("subtitles.ready data: files[%d].name %q appears twice", i, f.Name)
		}
		seen[f.Name] = true
		out = append(out, object{path.Join(base, f.Name), contentType(f.Format), []byte(f.Content)})
	}
	return out, nil
}

// contentType is the media type of a subtitle format.
func contentType(format string) string {
	switch format {
	case "vtt":
		return "text/vtt; charset=utf-8"
	case "ttml":
		return "application/ttml+xml"
	}
	return "text/plain; charset=utf-8"
}
