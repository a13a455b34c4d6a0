package blobsink

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/scribehook/scribehook/sinks"
)

// s3Params are the query parameters of an s3:// bucket URL this package reads. They are
// gocloud.dev's names (s3blob's URL opener), so that a URL written for another gocloud program
// works here; the ones not listed are refused rather than ignored.
type s3Params struct {
	region, endpoint, profile string
	pathStyle, disableHTTPS   bool
	anonymous                 bool
	requestChecksum           aws.RequestChecksumCalculation
	responseChecksum          aws.ResponseChecksumValidation
}

// s3ParamNames lists the query parameters parseS3Params takes, for its error.
var s3ParamNames = []string{"region", "endpoint", "use_path_style", "disable_https", "profile", "anonymous",
	"request_checksum_calculation", "response_checksum_validation"}

// parseS3Params reads q; its errors name the parameter and quote no other part of the URL.
func parseS3Params(q url.Values) (s3Params, error) {
	p := s3Params{
		requestChecksum:  aws.RequestChecksumCalculationWhenSupported,
		responseChecksum: aws.ResponseChecksumValidationWhenSupported,
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range q {
			if !yield(k) {
				return
			}
		}
	}) {
		if len(q[name]) != 1 {
			return p, fmt.Errorf("query parameter %s is given %d times", name, len(q[name]))
		}
		v := q.Get(name)
		var err error
		switch name {
		case "region":
			p.region = v
		case "profile":
			p.profile = v
		case "endpoint":
			eu, perr := url.Parse(v)
			if perr != nil || eu.User != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
				return p, errors.New("query parameter endpoint must be an http or https URL without credentials")
			}
			p.endpoint = v
		case "use_path_style", "s3ForcePathStyle":
			p.pathStyle, err = strconv.ParseBool(v)
		case "disable_https":
			p.disableHTTPS, err = strconv.ParseBool(v)
		case "anonymous":
			p.anonymous, err = strconv.ParseBool(v)
		case "request_checksum_calculation":
			switch strings.ToLower(v) {
			case "when_supported":
			case "when_required":
				p.requestChecksum = aws.RequestChecksumCalculationWhenRequired
			default:
				err = errors.New("must be when_supported or when_required")
			}
		case "response_checksum_validation":
			switch strings.ToLower(v) {
			case "when_supported":
			case "when_required":
				p.responseChecksum = aws.ResponseChecksumValidationWhenRequired
			default:
				err = errors.New("must be when_supported or when_required")
			}
		default:
			return p, fmt.Errorf("query parameter %q is not one this sink reads (%s)", name, strings.Join(s3ParamNames, ", "))
		}
		if err != nil {
			return p, fmt.Errorf("query parameter %s: %w", name, err)
		}
	}
	return p, nil
}

// newS3Client builds the S3 client of a bucket URL's parameters. Every request it makes goes
// through hc, the guarded client: the bucket's, and those of the AWS SDK's credential sources
// (STS, SSO, instance and container metadata), so that an instance role works only when the
// sink's allow names the metadata address. keys, when given, are the only credentials: the
// SDK's sources are not consulted. The SDK does not retry: the dispatcher's schedule does.
func newS3Client(ctx context.Context, p s3Params, keys sinks.StaticKeys, hc config.HTTPClient) (*s3.Client, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(hc),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithRequestChecksumCalculation(p.requestChecksum),
		config.WithResponseChecksumValidation(p.responseChecksum),
	}
	if p.region != "" {
		opts = append(opts, config.WithRegion(p.region))
	}
	if p.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(p.profile))
	}
	switch {
	case p.anonymous:
		opts = append(opts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	case !keys.IsZero():
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(keys.AccessKeyID, keys.SecretAccessKey, keys.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = p.pathStyle
		o.EndpointOptions.DisableHTTPS = p.disableHTTPS
		if p.endpoint != "" {
			o.BaseEndpoint = aws.String(p.endpoint)
		}
	}), nil
}
