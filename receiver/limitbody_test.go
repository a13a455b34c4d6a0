package receiver

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// A parent app set as Mount asks (FiberConfig: StreamRequestBody) no longer applies its
// BodyLimit to its own routes: fasthttp leaves streamed bodies alone, and a 6 MiB body reached
// a 1 MiB route whole. LimitBody on the app's own group gives the limit back: 413 past it, the
// body whole within it; the receiver's routes beside it keep their own limit.
func TestLimitBodyOnParentRoutes(t *testing.T) {
	h := newHarness(t)
	cfg := h.rcv.FiberConfig()
	if !cfg.StreamRequestBody || cfg.BodyLimit != h.rcv.bodyLimit || !cfg.DisablePreParseMultipartForm || cfg.ReadTimeout == 0 {
		t.Fatalf("FiberConfig: %+v", cfg)
	}
	cfg.BodyLimit = 1 << 20 // the app's own limit, which streaming no longer applies
	cfg.DisableStartupMessage = true
	parent := fiber.New(cfg)
	echo := func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(len(c.Body()))) }
	parent.Post("/open/upload", echo)
	parent.Group("/api", LimitBody(1<<20)).Post("/upload", echo)
	h.rcv.Mount(parent.Group(mountPrefix), MountOptions{})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = parent.Listener(h.rcv.Listener(ln)) }()
	t.Cleanup(func() { _ = parent.Shutdown() })
	base := "http://" + ln.Addr().String()
	post := func(path string, size int, chunked bool) (int, string) {
		t.Helper()
		var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("a"), size))
		if chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		resp, err := http.Post(base+path, "application/octet-stream", body)
		if err != nil {
			t.Fatalf("POST %s (%d bytes): %v", path, size, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Why LimitBody exists: without it, the app's own 1 MiB limit does not hold. (Should Fiber
	// ever apply BodyLimit to streamed bodies, this fails, and LimitBody's comment must change.)
	if status, body := post("/open/upload", 6<<20, false); status != http.StatusOK || body != strconv.Itoa(6<<20) {
		t.Errorf("6 MiB to a streaming app's route without LimitBody: %d %s, want it taken whole", status, body)
	}
	for _, chunked := range []bool{false, true} {
		if status, body := post("/api/upload", 6<<20, chunked); status != http.StatusRequestEntityTooLarge {
			t.Errorf("6 MiB to the limited route (chunked %t): %d %s, want 413", chunked, status, body)
		}
		if status, body := post("/api/upload", 512<<10, chunked); status != http.StatusOK || body != strconv.Itoa(512<<10) {
			t.Errorf("512 KiB to the limited route (chunked %t): %d %s, want 200 %d", chunked, status, body, 512<<10)
		}
	}
	// The receiver's routes are not the app's: a callback over the app's 1 MiB is still taken
	// up to the receiver's own limit.
	big := bigErrorBody(t, "11111111-0000-4000-8000-0000000000b1", 2<<20)
	resp, err := http.Post(base+mountPrefix+"/v1/callbacks/"+testRouteToken, "application/json", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("2 MiB callback beside the limited app: %d", resp.StatusCode)
	}
}
