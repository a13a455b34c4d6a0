package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Load builds the configuration `scribehook serve` reads: ServeDefaults, then the YAML file at
// path (none when path is ""), then the overrides among environ (KEY=VALUE entries, as
// os.Environ gives them), then Validate. Its errors name the key at fault, with the line for
// mistakes in the file. It is LoadOnto(ServeDefaults(), path, environ).
func Load(path string, environ []string) (Config, error) {
	return LoadOnto(ServeDefaults(), path, environ)
}

// LoadOnto is Load starting from base instead of ServeDefaults: LoadOnto(Default(), path,
// environ) gives a program the keys of a file and the environment over the library's defaults,
// which write nothing the program did not configure.
func LoadOnto(base Config, path string, environ []string) (Config, error) {
	cfg := base
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("read config: %w", err)
		}
		if err := decodeYAML(raw, &cfg); err != nil {
			return Config{}, err
		}
	}
	if err := applyEnv(&cfg, environ); err != nil {
		return Config{}, err
	}
	cfg.fillElementDefaults()
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decodeYAML applies a YAML document onto cfg, which holds the defaults: a key present in the
// file replaces the default, a mapping merges key by key, a list replaces the whole list. A
// null value (a key with nothing after it) keeps the default.
//
// yaml.v3's own strict mode (KnownFields) names neither the path of an unknown key nor the key
// of a type error, so the document is walked here against the struct.
func decodeYAML(raw []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file, or only comments
		}
		return fmt.Errorf("config: %w", withLine(raw, err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("config: the file holds several YAML documents: keep one")
	}
	d := &decoder{}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	if isNull(root) {
		return nil
	}
	d.value(root, reflect.ValueOf(cfg).Elem(), "")
	return errors.Join(d.errs...)
}

// withLine gives a line to the yaml package's errors that name none: it leaves out "line 1"
// (its marks count from 0 and 0 prints nothing), and its reader's errors about bytes it cannot
// read carry no mark at all.
func withLine(raw []byte, err error) error {
	rest, ok := strings.CutPrefix(err.Error(), "yaml: ")
	if !ok || strings.HasPrefix(rest, "line ") {
		return err
	}
	line := 1
	if strings.Contains(rest, "UTF-8") || strings.Contains(rest, "control characters") {
		if bytes.HasPrefix(raw, []byte{0xfe, 0xff}) || bytes.HasPrefix(raw, []byte{0xff, 0xfe}) {
			// Its lines are not counted here, and the yaml package's own message (control
			// characters) does not tell what is wrong.
			return errUTF16
		}
		line = unreadableLine(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")))
	}
	return fmt.Errorf("yaml: line %d: %s", line, rest)
}

// errUTF16 is the error of a file that starts with a UTF-16 (or UTF-32) byte order mark.
var errUTF16 = errors.New("the file is UTF-16 or UTF-32 (it starts with a byte order mark): save it as UTF-8")

// unreadableLine is the line of the first byte that is not UTF-8 or not a printable character.
func unreadableLine(raw []byte) int {
	line := 1
	for len(raw) > 0 {
		r, n := utf8.DecodeRune(raw)
		if r == utf8.RuneError && n <= 1 || !yamlPrintable(r) {
			return line
		}
		if r == '\n' {
			line++
		}
		raw = raw[n:]
	}
	return line
}

// yamlPrintable is YAML 1.2's c-printable, as the yaml package's reader checks it.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0x10000 && r <= 0x10ffff:
		return true
	case r >= 0xe000 && r <= 0xfffd:
		return r != 0xfeff
	}
	return false
}

type decoder struct{ errs []error }

func (d *decoder) fail(n *yaml.Node, format string, args ...any) {
	d.errs = append(d.errs, fmt.Errorf("config: line %d: %s", n.Line, fmt.Sprintf(format, args...)))
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	keepType     = reflect.TypeFor[Keep]()
)

// value decodes n into v; path is the dotted path of v ("" for the root).
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if isNull(n) {
		return
	}
	switch {
	case v.Kind() == reflect.Struct:
		d.mapping(n, v, path)
	case v.Kind() == reflect.Slice:
		d.sequence(n, v, path)
	case v.Kind() == reflect.Map:
		d.stringMap(n, v, path)
	default:
		d.scalar(n, v, path)
	}
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		name := path
		if name == "" {
			d.fail(n, "the configuration must be a mapping of keys (got %s)", describe(n))
			return
		}
		d.fail(n, "%s must be a mapping of keys (got %s)", name, describe(n))
		return
	}
	fields := structFields(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, "keys must be plain names (got %s)", describe(k))
			continue
		}
		if k.Value == "<<" {
			d.fail(k, "merge keys (<<) are not supported: write the keys out")
			continue
		}
		key := join(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.fail(k, "key %q is given twice (first on line %d)", key, line)
			continue
		}
		seen[k.Value] = k.Line
		idx, ok := fields[k.Value]
		if !ok {
			d.fail(k, "unknown key %q%s", key, suggest(k.Value, path, fields))
			continue
		}
		d.value(val, v.Field(idx), key)
	}
}

// stringMap decodes a mapping of names to scalars (a sink's headers), each key once.
func (d *decoder) stringMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, "%s must be a mapping (got %s)", path, describe(n))
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "<<" {
			d.fail(k, "%s: keys must be plain names (got %s)", path, describe(k))
			continue
		}
		key := fmt.Sprintf("%s[%s]", path, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.fail(k, "key %q is given twice (first on line %d)", key, line)
			continue
		}
		seen[k.Value] = k.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		d.value(val, elem, key)
		out.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), elem)
	}
	v.Set(out)
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, "%s must be a list (got %s)", path, describe(n))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		d.value(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(out)
}

func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) {
	want := typeName(v.Type())
	if n.Kind != yaml.ScalarNode {
		d.fail(n, "%s must be %s (got %s)", path, want, describe(n))
		return
	}
	if err := setScalar(v, n.Value, n.Tag); err != nil {
		d.fail(n, "%s must be %s (got %s)", path, want, describe(n))
	}
}

// setScalar parses text into v by v's type. tag is the YAML tag, "" for environment values.
func setScalar(v reflect.Value, text, tag string) error {
	if v.Kind() == reflect.Pointer {
		// An optional value (absent: nil, its default decided elsewhere).
		p := reflect.New(v.Type().Elem())
		if err := setScalar(p.Elem(), text, tag); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	switch {
	case v.Type() == keepType:
		k, err := ParseKeep(text)
		if err != nil {
			return err
		}
		v.SetInt(int64(k))
	case v.Type() == durationType:
		if tag == "!!int" && text == "0" {
			v.SetInt(0)
			return nil
		}
		dur, err := time.ParseDuration(text)
		if err != nil {
			return err
		}
		v.SetInt(int64(dur))
	case v.Kind() == reflect.String:
		v.SetString(text) // any scalar reads as its text: port: 8787 is a fine string
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case v.Kind() == reflect.Float64:
		f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
		if err != nil {
			return err
		}
		v.SetFloat(f)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		i, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 0, 64)
		if err != nil {
			return err
		}
		v.SetInt(i)
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

func typeName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		return typeName(t.Elem())
	}
	switch {
	case t == durationType:
		return "a duration such as 10s or 1m30s"
	case t == keepType:
		return "a duration such as 36h or 7d, or forever"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return "an integer"
	case t.Kind() == reflect.Float64:
		return "a number"
	}
	return t.String()
}

// describe names what a node holds, for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(short(n.Value))
	}
	return "an alias"
}

func short(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// structFields maps yaml names to field indexes.
func structFields(t reflect.Type) map[string]int {
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out[name] = i
	}
	return out
}

// suggest proposes the closest known key, or explains that secrets are not read from the file
// when key is a secret whose variable name the file should give instead (api_key →
// api_key_env).
func suggest(key, path string, fields map[string]int) string {
	if _, ok := fields[key+"_env"]; ok {
		return fmt.Sprintf(" (secrets are not read from the file: set %q to the name of an environment variable that holds it)", join(path, key+"_env"))
	}
	best, bestDist := "", 3
	lower := strings.ToLower(key)
	for name := range fields {
		dist := levenshtein(lower, name)
		if dist < bestDist || (dist == bestDist && best != "" && name < best) {
			best, bestDist = name, dist
		}
	}
	if best == "" || bestDist > max(1, len(key)/3) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", join(path, best))
}

// levenshtein counts the single-character edits (insert, delete, substitute, swap of two
// neighbours) between a and b.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
