package testinfra

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// EnvWeed names seaweedfs's weed binary, the S3-compatible server of the blob sink's tests;
// without it the binary is looked up in PATH, then where scripts/weed.sh builds it.
const EnvWeed = "SCRIBEHOOK_WEED"

// WeedCachePath is where scripts/weed.sh puts the weed it builds: $HOME/.cache/scribehook/weed/weed.
func WeedCachePath() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "scribehook", "weed", "weed")
}

// FindWeed is the weed binary: $SCRIBEHOOK_WEED, weed in PATH, or scripts/weed.sh's cache.
// The error wraps ErrNoBinary and says how to get one.
func FindWeed() (string, error) {
	if p := os.Getenv(EnvWeed); p != "" {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%s=%s is not a file: %w", EnvWeed, p, ErrNoBinary)
		}
		return p, nil
	}
	if p, err := exec.LookPath("weed"); err == nil {
		return p, nil
	}
	if p := WeedCachePath(); p != "" {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("seaweedfs's weed not found: run scripts/weed.sh (builds it into %s) or set %s: %w",
		filepath.Dir(WeedCachePath()), EnvWeed, ErrNoBinary)
}

// S3Server is a seaweedfs server (master, volume, filer and S3 gateway in one process)
// listening on loopback only, every port free when it started. Without keys it has no
// identities, so it takes any request, signed with any key or not; with keys, it takes only
// requests signed with them.
type S3Server struct {
	Endpoint string // http://127.0.0.1:port, the S3 API
	Dir      string
	keys     S3Keys
	proc     *Process
}

// S3Keys are the one identity of a server that requires signed requests.
type S3Keys struct{ AccessKeyID, SecretAccessKey string }

// StartWeed runs weed server in dir (created if missing) and waits until its S3 API answers.
func StartWeed(dir string) (*S3Server, error) { return StartWeedWithKeys(dir, S3Keys{}) }

// StartWeedWithKeys is StartWeed with one identity, keys, when they are not zero: the server
// then refuses anonymous requests and those signed with other keys.
func StartWeedWithKeys(dir string, keys S3Keys) (*S3Server, error) {
	bin, err := FindWeed()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("weed directory: %w", err)
	}
	// A port taken between FreePort and weed's bind (by another test's server) makes weed exit
	// at start: it starts again on other ports.
	for attempt := 1; ; attempt++ {
		s, err := startWeed(bin, dir, data, keys)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return s, err
		}
	}
}

func startWeed(bin, dir, data string, keys S3Keys) (*S3Server, error) {
	// Every port weed would open, each a free one: the defaults (9333, 8080, 8888, 8333, their
	// gRPC ports at +10000, Iceberg's 8181, Lance's 9101) would collide between tests.
	names := []string{"master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
		"filer.port.grpc", "s3.port", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance"}
	args := []string{"server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data, "-s3",
		"-master.volumeSizeLimitMB=64", "-volume.max=0"}
	ports, taken := map[string]string{}, map[string]bool{}
	for _, n := range names {
		p, err := FreePort()
		for err == nil && taken[p] { // each port is free when drawn, so one can come twice
			p, err = FreePort()
		}
		if err != nil {
			return nil, err
		}
		ports[n], taken[p] = p, true
		args = append(args, "-"+n+"="+p)
	}
	s := &S3Server{Endpoint: "http://" + net.JoinHostPort("127.0.0.1", ports["s3.port"]), Dir: dir, keys: keys}
	s.proc = &Process{
		Name: "weed", Dir: dir, Within: 60 * time.Second,
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, args...)
			// weed makes an identity of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and then
			// refuses anonymous requests: it runs without the test's, with the server's own.
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "AWS_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			if keys != (S3Keys{}) {
				cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID="+keys.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+keys.SecretAccessKey)
			}
			return cmd
		},
		Ready: s.ready,
	}
	if err := s.proc.Start(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// ready is nil once the S3 API answers (403 to an anonymous listing of buckets is an answer).
func (s *S3Server) ready() error {
	resp, err := http.Get(s.Endpoint + "/")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("weed s3: %s", resp.Status)
	}
	return nil
}

// CreateBucket creates a bucket (PUT /name), or does nothing if it exists; signed with the
// server's keys when it has some.
func (s *S3Server) CreateBucket(name string) error {
	for deadline := time.Now().Add(30 * time.Second); ; {
		req, err := http.NewRequest(http.MethodPut, s.Endpoint+"/"+name, nil)
		if err != nil {
			return err
		}
		if err := s.sign(req); err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusConflict {
				return nil
			}
			err = fmt.Errorf("create bucket %s: %s", name, resp.Status)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// emptySHA256 is the SHA-256 of an empty body, the payload hash of a request without one.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// sign signs req (without a body) with the server's keys (signature version 4, region us-east-1).
func (s *S3Server) sign(req *http.Request) error {
	if s.keys == (S3Keys{}) {
		return nil
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	creds := aws.Credentials{AccessKeyID: s.keys.AccessKeyID, SecretAccessKey: s.keys.SecretAccessKey}
	return v4.NewSigner().SignHTTP(context.Background(), creds, req, emptySHA256, "s3", "us-east-1", time.Now())
}

// Stop ends the server (SIGTERM, SIGKILL after the grace): the S3 API refuses connections
// from then on.
func (s *S3Server) Stop() error { return s.proc.Signal(syscall.SIGTERM, stopGrace) }

// Kill ends the server at once.
func (s *S3Server) Kill() { s.proc.Kill() }

// Weed runs a seaweedfs S3 server until the test ends, with bucket created. Without weed the
// test skips, saying how to get it.
func Weed(t testing.TB, bucket string) *S3Server {
	t.Helper()
	return WeedWithKeys(t, bucket, S3Keys{})
}

// WeedWithKeys is Weed with one identity (StartWeedWithKeys).
func WeedWithKeys(t testing.TB, bucket string, keys S3Keys) *S3Server {
	t.Helper()
	s, err := StartWeedWithKeys(t.TempDir(), keys)
	if errors.Is(err, ErrNoBinary) {
		t.Skipf("%v: needed to run this test against a real S3 server", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	if err := s.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	return s
}
