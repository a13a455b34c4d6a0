package receiver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/sirupsen/logrus"

	"github.com/scribehook/scribehook/internal/logx"
	"github.com/scribehook/scribehook/receiver"
	"github.com/scribehook/scribehook/store"
	"github.com/scribehook/scribehook/store/sqlite"
)

// The callback routes, health and the read API mounted under /hooks of a program's own Fiber
// app. The callback URLs given to the service are then https://<host>/hooks/v1/callbacks/<token>.
func ExampleReceiver_Mount() {
	st, batcher, done, err := exampleStore()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	rcv, err := receiver.New(receiver.Config{
		Store:     st,
		Ingester:  batcher,
		Routes:    []receiver.Route{{Name: "partner", Token: "partner-token-0123456789abcdef"}},
		ReadToken: "read-token",
		Logger:    quietLogger(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// Fiber's defaults work; in production set StreamRequestBody: true (the token is then
	// checked before the body is even received), DisablePreParseMultipartForm: true, and the
	// server's timeouts (see Mount).
	app := fiber.New()
	rcv.Mount(app.Group("/hooks"), receiver.MountOptions{Health: true, ReadAPI: true})

	post := func(token string) {
		body := `{"id":"0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11","event":"transcription.error","error":{"code":500,"message":"audio unreachable"}}`
		req := httptest.NewRequest("POST", "/hooks/v1/callbacks/"+token, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := app.Test(req, -1)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(b))
	}
	post("partner-token-0123456789abcdef")
	post("partner-token-0123456789abcdef") // the service retries: already stored
	post("not-a-token")

	resp, err := app.Test(httptest.NewRequest("GET", "/hooks/healthz", nil), -1)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(b))
	// Output:
	// 200 {"status":"stored","id":1}
	// 200 {"status":"duplicate","id":1}
	// 401 {"error":"unknown callback token","status":401}
	// 200 {"status":"ok"}
}

// The callback routes for a program without Fiber: net/http, under /hooks of its ServeMux.
func ExampleReceiver_Handler() {
	st, batcher, done, err := exampleStore()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	rcv, err := receiver.New(receiver.Config{
		Store:    st,
		Ingester: batcher,
		Routes:   []receiver.Route{{Name: "partner", Token: "partner-token-0123456789abcdef"}},
		Logger:   quietLogger(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	mux := http.NewServeMux()
	mux.Handle("/hooks/", http.StripPrefix("/hooks", rcv.Handler(receiver.MountOptions{Health: true})))
	// Serve it with an http.Server that sets ReadHeaderTimeout (net/http has none by default).

	body := `{"id":"0f4e7a55-4b8d-4c7e-9f0d-2f3b5b7b9a11","event":"transcription.error","error":{"code":500,"message":"audio unreachable"}}`
	for _, target := range []string{"/hooks/v1/callbacks/partner-token-0123456789abcdef", "/hooks/v1/callbacks/not-a-token"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("POST", target, strings.NewReader(body)))
		fmt.Println(rec.Code, rec.Body.String())
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/hooks/healthz", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 200 {"status":"stored","id":1}
	// 401 {"error":"unknown callback token","status":401}
	// 200 {"status":"ok"}
}

// exampleStore is the examples' set-up, kept out of them so that they show the receiver: a
// SQLite store in a temporary directory and the batcher that commits callbacks into it. done
// closes both and removes the directory.
func exampleStore() (store.Store, *store.Batcher, func(), error) {
	dir, err := os.MkdirTemp("", "scribehook-example")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("temporary directory: %w", err)
	}
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(dir, "scribehook.db")})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, nil, fmt.Errorf("open the store: %w", err)
	}
	batcher := store.NewBatcher(st, store.BatcherOptions{})
	return st, batcher, func() {
		batcher.Close()
		_ = st.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// quietLogger discards the receiver's logs: the examples print only its answers.
func quietLogger() *logrus.Entry { return logx.Discard() }
