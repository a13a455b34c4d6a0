// Package deploy_test checks that the deployment files agree with each other and with the
// code: each configuration loads as serve loads it, writes only where its deployment lets it
// write, and names the addresses, ports and commands the other files give. The image and the
// unit themselves are run by scripts/image-test.sh.
package deploy_test

import (
	"bufio"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/scribehook/scribehook"
	"github.com/scribehook/scribehook/configs"
)

// load loads a configuration file of this folder as serve does, with environ as its environment.
func load(t *testing.T, path string, environ []string) configs.Config {
	t.Helper()
	cfg, err := configs.Load(path, environ)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

// written is every path the configuration makes serve write to: the SQLite file, the
// subtitle directory and each file sink's directory.
func written(cfg configs.Config) []string {
	var out []string
	if cfg.Store.Driver == "sqlite" {
		out = append(out, cfg.Store.DSN)
	}
	out = append(out, cfg.Subtitles.Dir)
	for _, s := range cfg.Sinks {
		if s.Kind == "file" {
			out = append(out, s.Dir)
		}
	}
	return out
}

// dockerfile is the value of the first final-stage instruction of the Dockerfile that starts
// with prefix ("ENV SCRIBEHOOK_CONFIG=", "EXPOSE ").
func dockerfile(t *testing.T, prefix string) string {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	final := string(raw)[strings.Index(string(raw), "\nFROM scratch"):]
	for _, line := range strings.Split(final, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			return strings.Fields(v)[0]
		}
	}
	t.Fatalf("the Dockerfile's final stage has no %q", prefix)
	return ""
}

func TestImageConfiguration(t *testing.T) {
	cfg := load(t, "image/scribehook.yaml", nil)
	// A read-only root: everything serve writes is in the /data volume.
	for _, p := range written(cfg) {
		if !strings.HasPrefix(p, "/data/") {
			t.Errorf("the image's configuration writes to %q, outside /data", p)
		}
	}
	if cfg.Store.Driver != "sqlite" || cfg.Store.DSN != "/data/scribehook.db" {
		t.Errorf("store = %s %s, want sqlite /data/scribehook.db", cfg.Store.Driver, cfg.Store.DSN)
	}
	// Reachable from outside the container, on the port the image exposes.
	host, port, _ := net.SplitHostPort(cfg.Listen)
	if host != "0.0.0.0" || port != strings.TrimSuffix(dockerfile(t, "EXPOSE "), "/tcp") {
		t.Errorf("listen %s, the Dockerfile exposes %s", cfg.Listen, dockerfile(t, "EXPOSE "))
	}
	// Where rootfs.sh puts the file is where the image's SCRIBEHOOK_CONFIG points.
	script, err := os.ReadFile("image/rootfs.sh")
	if err != nil {
		t.Fatal(err)
	}
	want := `cp deploy/image/scribehook.yaml "$dir` + dockerfile(t, "ENV SCRIBEHOOK_CONFIG=") + `"`
	if !strings.Contains(string(script), want) {
		t.Errorf("rootfs.sh does not copy the configuration to SCRIBEHOOK_CONFIG (%s)", want)
	}
	// SQLite's temporary files, as large as the database for VACUUM, go to the volume: the
	// first writable directory would otherwise be a /tmp tmpfs, in memory.
	if dir := dockerfile(t, "ENV SQLITE_TMPDIR="); dir != "/data" {
		t.Errorf("SQLITE_TMPDIR=%s, want the volume /data", dir)
	}
}

// service is what the test reads of a compose service.
type service struct {
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	ReadOnly    bool              `yaml:"read_only"`
	Healthcheck struct {
		Test    []string `yaml:"test"`
		Disable bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
}

// composeVar expands ${NAME:-default} as compose does with NAME unset.
var composeVar = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)

// composeRequired is ${NAME:?message}: compose refuses to start with NAME unset.
var composeRequired = regexp.MustCompile(`\$\{([A-Z_]+):\?[^}]*\}`)

// operatorSecret is what an operator sets a required variable to: a token new would make.
const operatorSecret = "kJ8sP2nQ7vX4mR1tW6yZ3bA9cD0eF5gH"

// environ is a service's environment as serve sees it: the compose file's values with the
// defaults of its ${…:-…} references, and a strong secret for its required ${…:?…} ones.
func (s service) environ() []string {
	var out []string
	for k, v := range s.Environment {
		v = composeVar.ReplaceAllString(v, "$1")
		out = append(out, k+"="+composeRequired.ReplaceAllString(v, operatorSecret))
	}
	return out
}

// mounted is the host file (relative to this folder) a service mounts at target.
func (s service) mounted(t *testing.T, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == target {
			return parts[0]
		}
	}
	t.Fatalf("no volume mounted at %s in %q", target, s.Volumes)
	return ""
}

// flag is the value after name in a command line.
func flag(t *testing.T, args []string, name string) string {
	t.Helper()
	i := slices.Index(args, name)
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("no %s in %q", name, args)
	}
	return args[i+1]
}

// composeFile is what the tests read of compose.yaml.
type composeFileT struct {
	Services map[string]service `yaml:"services"`
	Networks map[string]struct {
		IPAM struct {
			Config []struct {
				Subnet string `yaml:"subnet"`
			} `yaml:"config"`
		} `yaml:"ipam"`
	} `yaml:"networks"`
}

func composeFile(t *testing.T) composeFileT {
	t.Helper()
	raw, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose composeFileT
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return compose
}

func TestComposeReplicas(t *testing.T) {
	compose := composeFile(t)
	sandbox := compose.Services["sandbox"]
	_, sandboxPort, _ := net.SplitHostPort(flag(t, sandbox.Command, "--listen"))
	if sandbox.Command[0] != "sandbox" || !slices.Contains(sandbox.Ports, "127.0.0.1:"+sandboxPort+":"+sandboxPort) {
		t.Errorf("sandbox: command %q, ports %q", sandbox.Command, sandbox.Ports)
	}
	// The sandbox's callbacks go to the balancer, a private address it refuses unless allowed:
	// the allowance is the project's network, no wider.
	if cfg := compose.Networks["default"].IPAM.Config; len(cfg) != 1 || flag(t, sandbox.Command, "--allow-fetch") != cfg[0].Subnet {
		t.Errorf("sandbox: --allow-fetch %q, want the default network's subnet (%+v)", flag(t, sandbox.Command, "--allow-fetch"), cfg)
	}
	proxyPort := haproxyBind(t)
	if !slices.Contains(compose.Services["proxy"].Ports, "127.0.0.1:"+proxyPort+":"+proxyPort) {
		t.Errorf("proxy publishes %q, haproxy.cfg binds :%s", compose.Services["proxy"].Ports, proxyPort)
	}
	servers := haproxyServers(t)
	var replicas []string
	for name, s := range compose.Services {
		if !strings.HasPrefix(name, "replica-") {
			continue
		}
		replicas = append(replicas, name)
		cfg := load(t, s.mounted(t, "/etc/scribehook/scribehook.yaml"), s.environ())
		if _, err := cfg.Secrets(s.environ()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// docs/scaling.md: PostgreSQL and a broker, never gochannel with several replicas.
		if cfg.Store.Driver != "postgres" || hostOf(t, cfg.Store.DSN) != "postgres" ||
			cfg.Bus.Driver != "redisstream" || hostOf(t, cfg.Bus.URL) != "redis" {
			t.Errorf("%s: store %s at %s, bus %s at %s; want postgres at postgres, redisstream at redis",
				name, cfg.Store.Driver, hostOf(t, cfg.Store.DSN), cfg.Bus.Driver, hostOf(t, cfg.Bus.URL))
		}
		// The service posts callbacks to the balancer; serve calls the sandbox.
		if want := "http://proxy:" + proxyPort; cfg.PublicURL != want {
			t.Errorf("%s: public_url %s, want %s", name, cfg.PublicURL, want)
		}
		if want := "http://sandbox:" + sandboxPort; cfg.Service.BaseURL != want {
			t.Errorf("%s: service.base_url %s, want %s", name, cfg.Service.BaseURL, want)
		}
		_, port, _ := net.SplitHostPort(cfg.Listen)
		if want := name + ":" + port; servers[name] != want {
			t.Errorf("haproxy.cfg sends %s to %q, want %q", name, servers[name], want)
		}
		for _, p := range written(cfg) {
			if !strings.HasPrefix(p, "/data/") {
				t.Errorf("%s writes to %q, outside /data", name, p)
			}
		}
		if !s.ReadOnly || !slices.Equal(s.Healthcheck.Test, []string{"CMD", "/scribehook", "healthcheck"}) {
			t.Errorf("%s: read_only %v, healthcheck %q", name, s.ReadOnly, s.Healthcheck.Test)
		}
	}
	slices.Sort(replicas)
	if !slices.Equal(replicas, []string{"replica-1", "replica-2"}) || len(servers) != len(replicas) {
		t.Errorf("replicas %q, haproxy servers %q", replicas, servers)
	}
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname()
}

// haproxyLines is every directive of compose/haproxy.cfg, split into words.
func haproxyLines(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("compose/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w := strings.Fields(sc.Text()); len(w) > 0 && !strings.HasPrefix(w[0], "#") {
			out = append(out, w)
		}
	}
	return out
}

// haproxyServers is the balancer's servers, name to address; it must check each on /readyz.
func haproxyServers(t *testing.T) map[string]string {
	t.Helper()
	servers := map[string]string{}
	check := false
	for _, w := range haproxyLines(t) {
		switch {
		case w[0] == "server" && len(w) >= 3:
			servers[w[1]] = w[2]
		case strings.Join(w, " ") == "option httpchk GET /readyz":
			check = true
		}
	}
	if !check {
		t.Error("haproxy.cfg does not check the replicas on /readyz")
	}
	return servers
}

// haproxyBind is the port the balancer listens on.
func haproxyBind(t *testing.T) string {
	t.Helper()
	for _, w := range haproxyLines(t) {
		if w[0] == "bind" {
			return strings.TrimPrefix(w[1], ":")
		}
	}
	t.Fatal("haproxy.cfg binds nothing")
	return ""
}

func TestSystemdUnit(t *testing.T) {
	raw, err := os.ReadFile("systemd/scribehook.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			unit[k] = v
		}
	}
	// systemd kills what is still running after TimeoutStopSec: serve must have finished
	// its own orderly stop first.
	stop, err := time.ParseDuration(unit["TimeoutStopSec"])
	if err != nil || stop <= scribehook.DefaultShutdownTimeout {
		t.Errorf("TimeoutStopSec=%s (%v), want more than serve's %v", unit["TimeoutStopSec"], err, scribehook.DefaultShutdownTimeout)
	}
	// ProtectSystem=strict: the state directory is the only writable place, and the
	// configuration's relative paths land there through WorkingDirectory.
	if unit["WorkingDirectory"] != "%S/"+unit["StateDirectory"] || unit["ProtectSystem"] != "strict" {
		t.Errorf("WorkingDirectory=%s StateDirectory=%s ProtectSystem=%s", unit["WorkingDirectory"], unit["StateDirectory"], unit["ProtectSystem"])
	}
	// SQLite's temporary files in the state directory too, not in PrivateTmp's /tmp (a tmpfs,
	// memory, on many hosts).
	if want := "SQLITE_TMPDIR=%S/" + unit["StateDirectory"]; unit["Environment"] != want {
		t.Errorf("Environment=%s, want %s", unit["Environment"], want)
	}
	cfg := load(t, "systemd/scribehook.yaml", nil)
	for _, p := range written(cfg) {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			t.Errorf("the unit's configuration writes to %q, outside the state directory", p)
		}
	}
	if want := "--config /etc/scribehook/scribehook.yaml"; !strings.HasSuffix(unit["ExecStart"], " serve "+want) {
		t.Errorf("ExecStart=%s, want serve %s", unit["ExecStart"], want)
	}
}

// TestNoDefaultSecrets: no shipped file gives a secret a default value: a default is a secret
// everyone knows. Compose's ${NAME:-default} is refused for any variable that names a token,
// key, password or secret (${NAME:?…} makes the operator set it), and the files serve reads
// pass serve's own strength check with the operator's secrets.
func TestNoDefaultSecrets(t *testing.T) {
	secretName := regexp.MustCompile(`TOKEN|KEY|PASSWORD|SECRET`)
	for _, path := range []string{"compose.yaml", "compose/replica.yaml", "image/scribehook.yaml", "systemd/scribehook.yaml", "systemd/scribehook.service"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\$\{([A-Z_]+):-[^}]*\}`).FindAllStringSubmatch(string(b), -1) {
			if secretName.MatchString(m[1]) {
				t.Errorf("%s gives the secret %s a default: %s", path, m[1], m[0])
			}
		}
	}
	for name, s := range composeFile(t).Services {
		if !strings.HasPrefix(name, "replica-") {
			continue
		}
		cfgPath := s.mounted(t, "/etc/scribehook/scribehook.yaml")
		cfg := load(t, cfgPath, s.environ())
		secrets, err := cfg.Secrets(s.environ())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if secrets.ReadToken != operatorSecret {
			t.Errorf("%s: the read token is %q, not the operator's", name, secrets.ReadToken)
		}
		if err := cfg.CheckStrength(secrets); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
