package receiver

import (
	"errors"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// A public_url without the mount prefix used to fail in silence: the service called
// public_url/v1/callbacks/<token>, the parent app answered 404, and a submitted job waited for
// its deadline. Mount now warns, naming both paths and nothing else of the URL, and Check
// reports it; a public path that ends with the prefix (a proxy in front strips the rest) is
// fine.
func TestMountChecksPublicURLPrefix(t *testing.T) {
	tests := []struct {
		public string
		mount  func(app *fiber.App) fiber.Router
		prefix string // "" when nothing is wrong
	}{
		{"https://user:pw@example.com", func(app *fiber.App) fiber.Router { return app.Group("/hooks") }, "/hooks"},
		{"https://example.com/api", func(app *fiber.App) fiber.Router { return app.Group("/hooks") }, "/hooks"},
		{"https://example.com/hooks", func(app *fiber.App) fiber.Router { return app.Group("/a").Group("/hooks") }, "/a/hooks"},
		{"https://example.com/hooks", func(app *fiber.App) fiber.Router { return app.Group("/hooks") }, ""},
		{"https://example.com/HOOKS/", func(app *fiber.App) fiber.Router { return app.Group("/hooks/") }, ""},
		{"https://example.com/base/hooks", func(app *fiber.App) fiber.Router { return app.Group("/hooks") }, ""},
		{"https://example.com/hooks", func(app *fiber.App) fiber.Router { return app }, ""},
		{"https://example.com", func(app *fiber.App) fiber.Router { return app }, ""},
	}
	for _, tt := range tests {
		h := newHarness(t, withConfig(func(c *Config) { c.PublicURL = tt.public }))
		h.rcv.Mount(tt.mount(fiber.New()), MountOptions{})
		err := h.rcv.Check()
		logs := h.logs.String()
		if tt.prefix == "" {
			if err != nil || strings.Contains(logs, "public_url does not end with") {
				t.Errorf("public_url %s: %v\n%s", tt.public, err, logs)
			}
			continue
		}
		var perr *PrefixError
		if !errors.As(err, &perr) || perr.Prefix != tt.prefix {
			t.Errorf("public_url %s, mounted under %s: Check() = %v", tt.public, tt.prefix, err)
			continue
		}
		if !strings.Contains(logs, "level=warning") || !strings.Contains(logs, "prefix="+tt.prefix) ||
			!strings.Contains(logs, "public_url_path="+perr.PublicPath) {
			t.Errorf("public_url %s: the warning does not name both paths:\n%s", tt.public, logs)
		}
		if strings.Contains(logs, "example.com") || strings.Contains(logs, "pw") || strings.Contains(err.Error(), "example.com") {
			t.Errorf("the warning or error names more of public_url than its path:\n%s\n%v", logs, err)
		}
	}
}
