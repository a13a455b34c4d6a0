package blobsink_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/internal/testinfra"
	"github.com/scribehook/scribehook/sinks"
	"github.com/scribehook/scribehook/sinks/blobsink"
	"github.com/scribehook/scribehook/sinks/sinktest"
)

// s3Env gives the SDK keys (weed without identities takes any) and keeps it off the instance
// metadata service.
func s3Env(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "scribehook-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "scribehook-test-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

// s3URL is the bucket URL of a sink or a reader at endpoint.
func s3URL(bucket, endpoint string) string {
	return "s3://" + bucket + "?endpoint=" + endpoint + "&use_path_style=true&region=us-east-1"
}

// eventObjects reads every object under an events/ folder of the bucket at url.
func eventObjects(t *testing.T, url string) [][]byte {
	t.Helper()
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var out [][]byte
	it := b.List(nil)
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(obj.Key, "/events/") {
			continue
		}
		body, err := b.ReadAll(ctx, obj.Key)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, body)
	}
	return out
}

func TestFileBucketConformance(t *testing.T) {
	sinktest.Run(t, sinktest.Features{ExactBytes: true, Deduplicates: true}, func(t *testing.T, name string) sinktest.Destination {
		dir := filepath.Join(t.TempDir(), "bucket")
		s, err := blobsink.New(sinks.Spec{Name: name, Kind: blobsink.Kind, URL: "file://" + dir, Prefix: "p"}, sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return sinktest.Destination{
			Sink:     s,
			Received: func(t *testing.T) [][]byte { return eventObjects(t, "file://"+dir) },
			// The folder gives way to a file: every write fails, as on a disk gone read-only.
			Break: func(t *testing.T) {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dir, []byte("not a folder"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

// The suite against a real S3 server: seaweedfs on loopback, behind a proxy that can stall.
func TestS3Conformance(t *testing.T) {
	s3Env(t)
	sinktest.Run(t, sinktest.Features{ExactBytes: true, Deduplicates: true}, func(t *testing.T, name string) sinktest.Destination {
		srv := testinfra.Weed(t, "conformance")
		p := newStallProxy(t, strings.TrimPrefix(srv.Endpoint, "http://"))
		s, err := blobsink.New(sinks.Spec{Name: name, Kind: blobsink.Kind, URL: s3URL("conformance", "http://"+p.addr),
			Allow: []string{"127.0.0.1"}}, sinks.Deps{Logger: logx.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return sinktest.Destination{
			Sink:     s,
			Received: func(t *testing.T) [][]byte { return eventObjects(t, s3URL("conformance", srv.Endpoint)) },
			// Killed: weed takes more than 20 s to stop on SIGTERM.
			Break: func(*testing.T) { srv.Kill() },
			Stall: func(*testing.T) { p.stalled.Store(true) },
		}
	})
}

// stallProxy forwards TCP connections to a server until stalled, from when it holds every
// byte it reads (on new connections and kept-alive ones) until the test ends.
type stallProxy struct {
	addr    string
	stalled atomic.Bool
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{addr: ln.Addr().String()}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if p.stalled.Load() {
					<-done
					return
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				dst.Close()
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			wg.Add(2)
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	return p
}
