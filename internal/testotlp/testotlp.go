// Package testotlp is an OTLP trace collector on loopback for tests: it takes the exports of
// OpenTelemetry's OTLP exporters over HTTP (POST /v1/traces, protobuf) or gRPC
// (the trace service's Export), decodes them with the protocol's own types, and keeps each span with
// the headers of the export that brought it. It checks that what package tracing builds really
// exports, and what.
package testotlp

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Span is one exported span, its ids in hex as W3C headers write them.
type Span struct {
	Name                   string
	TraceID, SpanID        string
	ParentSpanID           string // "" for a root
	Attributes             map[string]string
	Service                string // the resource's service.name
	Headers                http.Header
	LinkedTraces, LinkedTo []string // each link's trace and span id
}

// Collector keeps what was exported to it. Its methods are safe for concurrent use.
type Collector struct {
	// Endpoint is host:port, as tracing.endpoint takes it.
	Endpoint string

	mu      sync.Mutex
	spans   []Span
	exports int
	conns   int // connections accepted (HTTP)
}

// NewHTTP is a collector of OTLP over HTTP, closed when the test ends.
func NewHTTP(tb testing.TB) *Collector {
	c := &Collector{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "not an OTLP traces export", http.StatusNotFound)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "want a protobuf ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		c.add(&req, r.Header.Clone())
		b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			c.mu.Lock()
			c.conns++
			c.mu.Unlock()
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	c.Endpoint = strings.TrimPrefix(srv.URL, "http://")
	return c
}

// NewGRPC is a collector of OTLP over gRPC (without TLS), stopped when the test ends.
func NewGRPC(tb testing.TB) *Collector {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Collector{Endpoint: ln.Addr().String()}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, grpcService{c: c})
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(srv.Stop)
	return c
}

type grpcService struct {
	coltrace.UnimplementedTraceServiceServer
	c *Collector
}

func (g grpcService) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h := http.Header{}
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	g.c.add(req, h)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *Collector) add(req *coltrace.ExportTraceServiceRequest, h http.Header) {
	var spans []Span
	for _, rs := range req.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Attributes: attributes(s.GetAttributes()), Service: service, Headers: h,
				}
				if p := s.GetParentSpanId(); len(p) > 0 {
					sp.ParentSpanID = hex.EncodeToString(p)
				}
				for _, l := range s.GetLinks() {
					sp.LinkedTraces = append(sp.LinkedTraces, hex.EncodeToString(l.GetTraceId()))
					sp.LinkedTo = append(sp.LinkedTo, hex.EncodeToString(l.GetSpanId()))
				}
				spans = append(spans, sp)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exports++
	c.spans = append(c.spans, spans...)
}

// attributes renders OTLP attributes as text: strings as they are, other values as fmt prints
// them.
func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(x.DoubleValue)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans are the spans exported so far, in the order they came.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Exports counts the export requests received.
func (c *Collector) Exports() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exports
}

// Named are the spans of name exported so far.
func (c *Collector) Named(name string) []Span {
	var out []Span
	for _, s := range c.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Conns counts the connections an HTTP collector accepted, exports or not.
func (c *Collector) Conns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns
}
