package sinks

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/scribehook/scribehook/sinks/sinkkind"
)

// Kind is one kind of sink: how the configuration treats its entries (sinkkind.Kind: defaults,
// rules, redaction; configs reads them from there) and how a sink of the kind is built. A kind
// lives in one package, which registers it from init with RegisterKind.
type Kind struct {
	sinkkind.Kind
	// New builds a sink of the kind. New (the package's) has checked the name and the filter.
	New func(spec Spec, deps Deps) (Sink, error)
}

// The constructors, by kind name: the registry is one of the package's globals on purpose, as
// database/sql's drivers are, so that a program links a broker's client only by importing its
// kind.
var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// RegisterKind makes k available to New and to the configuration (sinkkind.Register). It panics
// when the name is empty or taken, or New is nil.
func RegisterKind(k Kind) {
	if k.New == nil {
		panic("sinks: RegisterKind needs a constructor")
	}
	sinkkind.Register(k.Kind)
	kindsMu.Lock()
	defer kindsMu.Unlock()
	kinds[k.Name] = k
}

// Kinds lists the registered kinds (sinkkind.Names).
func Kinds() []string { return sinkkind.Names() }

// ErrUnknownKind is wrapped by New's error for a kind no imported package registered.
var ErrUnknownKind = errors.New("unknown sink kind")

// lookupKind is spec's kind; its errors are a SpecError on Kind that list the linked kinds, or
// name the import that links a kind of this module.
func lookupKind(spec Spec) (Kind, error) {
	kindsMu.RLock()
	k, ok := kinds[spec.Kind]
	kindsMu.RUnlock()
	if ok {
		return k, nil
	}
	names := orList(Kinds())
	switch pkg, known := sinkkind.Import(spec.Kind); {
	case spec.Kind == "":
		return Kind{}, specErr(spec, "Kind", errors.New("is required: "+names))
	case known:
		return Kind{}, specErr(spec, "Kind", fmt.Errorf("%w %q: the program does not link it; add import _ %q", ErrUnknownKind, spec.Kind, pkg))
	}
	return Kind{}, specErr(spec, "Kind", fmt.Errorf("%q is not %s: %w", spec.Kind, names, ErrUnknownKind))
}

// orList writes "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return "none"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// DefaultDir is where a file sink of the configuration writes when its entry names no dir.
const DefaultDir = "./out"

// The built-in kinds: no client library of their own, linked with the package.
func init() {
	RegisterKind(Kind{
		Kind: sinkkind.Kind{
			Name: KindFile,
			Defaults: func(e *sinkkind.Entry) {
				if e.Dir == "" {
					e.Dir = DefaultDir
				}
			},
			Validate: func(e sinkkind.Entry) []sinkkind.Problem {
				if e.Dir == "" {
					return []sinkkind.Problem{{Key: "dir", Rule: "must not be empty for a file sink"}}
				}
				return nil
			},
		},
		New: func(spec Spec, deps Deps) (Sink, error) { return NewFile(spec, deps) },
	})
	RegisterKind(Kind{
		Kind: sinkkind.Kind{
			Name: KindWebhook,
			Validate: func(e sinkkind.Entry) []sinkkind.Problem {
				if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return []sinkkind.Problem{{Key: "url", Rule: fmt.Sprintf("must be an absolute http or https URL (got %q)", e.URL)}}
				}
				return nil
			},
		},
		New: func(spec Spec, deps Deps) (Sink, error) { return NewWebhook(spec, deps) },
	})
	RegisterKind(Kind{
		Kind: sinkkind.Kind{Name: KindLog},
		New:  func(spec Spec, deps Deps) (Sink, error) { return NewLog(spec, deps), nil },
	})
}
