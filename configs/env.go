package configs

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// step is one level of a configuration path: a field by its yaml name, or a list index.
type step struct {
	field string
	index int // -1 for a field
}

// override is an environment variable that names a configuration path.
type override struct {
	name, value string
	steps       []step
}

// EnvName is the variable that overrides the key at path, for example
// EnvName("service.base_url") = SCRIBEHOOK_SERVICE_BASE_URL and EnvName("routes[0].token_env")
// = SCRIBEHOOK_ROUTES_0_TOKEN_ENV.
func EnvName(path string) string {
	r := strings.NewReplacer(".", "_", "[", "_", "]", "")
	return EnvPrefix + strings.ToUpper(r.Replace(path))
}

// applyEnv applies every variable of environ whose name is a configuration path. Other
// variables, secrets included, are not looked at beyond their name.
func applyEnv(cfg *Config, environ []string) error {
	root := reflect.TypeFor[Config]()
	var ovs []override
	for k, v := range envMap(environ) {
		if v == "" || !strings.HasPrefix(k, EnvPrefix) {
			continue // empty counts as unset, as compose files and shells often leave them
		}
		if steps, ok := matchPath(root, strings.TrimPrefix(k, EnvPrefix)); ok {
			ovs = append(ovs, override{name: k, value: v, steps: steps})
		}
	}
	// Indexes in increasing order, so that _0_ then _1_ may each append an element.
	slices.SortFunc(ovs, func(a, b override) int { return compareSteps(a.steps, b.steps) })
	var errs []string
	for _, o := range ovs {
		if err := o.apply(reflect.ValueOf(cfg).Elem()); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return nil
}

func compareSteps(a, b []step) int {
	for i := range min(len(a), len(b)) {
		if c := cmp.Compare(a[i].index, b[i].index); c != 0 {
			return c
		}
		if c := cmp.Compare(a[i].field, b[i].field); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

// matchPath finds the scalar (or list of strings) field that name designates below t.
func matchPath(t reflect.Type, name string) ([]step, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		upper := strings.ToUpper(key)
		switch {
		case isLeaf(f.Type):
			if name == upper {
				return []step{{field: key, index: -1}}, true
			}
		case f.Type.Kind() == reflect.Struct:
			if rest, ok := strings.CutPrefix(name, upper+"_"); ok {
				if sub, ok := matchPath(f.Type, rest); ok {
					return append([]step{{field: key, index: -1}}, sub...), true
				}
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			rest, ok := strings.CutPrefix(name, upper+"_")
			if !ok {
				continue
			}
			num, rest, ok := strings.Cut(rest, "_")
			idx, err := strconv.Atoi(num)
			if !ok || err != nil || idx < 0 {
				continue
			}
			if sub, ok := matchPath(f.Type.Elem(), rest); ok {
				return append([]step{{field: key, index: -1}, {index: idx}}, sub...), true
			}
		}
	}
	return nil, false
}

// isLeaf reports whether a field takes one environment value: a scalar, or a list of strings or
// of durations (comma-separated).
func isLeaf(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		return isLeaf(t.Elem()) && t.Elem().Kind() != reflect.Slice // an optional scalar
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String || t.Elem() == durationType
	}
	return false
}

func (o override) path() string {
	var b strings.Builder
	for _, s := range o.steps {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.field)
	}
	return b.String()
}

func (o override) apply(v reflect.Value) error {
	for i, s := range o.steps {
		if s.index >= 0 {
			// v is the list; an index one past its end appends an element.
			switch {
			case s.index < v.Len():
			case s.index == v.Len():
				v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			default:
				listPath := override{steps: o.steps[:i]}.path()
				return fmt.Errorf("%s: index %d is past the end of %s (%d elements): number the elements from 0 without gaps",
					o.name, s.index, listPath, v.Len())
			}
			v = v.Index(s.index)
			continue
		}
		v = v.Field(structFields(v.Type())[s.field])
	}
	if v.Kind() == reflect.Slice {
		var items []string
		for _, item := range strings.Split(o.value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		if v.Type().Elem() == durationType {
			// A list of durations, e.g. SCRIBEHOOK_SINKS_0_RETRY=0s,5s,5m.
			out := reflect.MakeSlice(v.Type(), len(items), len(items))
			for i, item := range items {
				if err := setScalar(out.Index(i), item, ""); err != nil {
					return fmt.Errorf("%s: %s[%d] must be %s (got %q)", o.name, o.path(), i, typeName(durationType), short(item))
				}
			}
			v.Set(out)
			return nil
		}
		v.Set(reflect.ValueOf(items))
		return nil
	}
	if err := setScalar(v, strings.TrimSpace(o.value), ""); err != nil {
		return fmt.Errorf("%s: %s must be %s (got %q)", o.name, o.path(), typeName(v.Type()), short(o.value))
	}
	return nil
}
