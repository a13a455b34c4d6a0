// Package sinkkind is the registry of sink kinds as the configuration sees them: the kinds a
// program links, the keys of a sinks entry each reads, their defaults and their rules. It
// imports nothing, so that configs takes its list of kinds and their rules from here while the
// kinds themselves (package sinks and one package per broker kind) import configs and sinks.
// A kind registers itself with sinks.RegisterKind, which records it here.
package sinkkind

import (
	"slices"
	"sync"
)

// Entry is one element of the configuration's sinks list as its kind reads it: the name, and
// the keys whose meaning depends on the kind. The keys every sink has (events, categories,
// kinds, custom_metadata, ordered, concurrency, timeout, retry, rate, rate_burst, secret_env) are
// checked by configs itself.
type Entry struct {
	Name  string
	Dir   string   // dir: a directory (file)
	URL   string   // url: an endpoint (webhook) or a broker (redisstream, nats)
	Topic string   // topic: a stream or subject (redisstream, nats)
	Allow []string // allow: private hosts a webhook may reach
}

// Problem is one rule an entry breaks: the key as in the file ("url") and the rule, as configs
// shows it after "sinks[i].<key> ".
type Problem struct {
	Key  string
	Rule string
}

// Kind is how the configuration treats one kind of sink.
type Kind struct {
	// Name is the value of the entry's kind key.
	Name string
	// Defaults fills the keys an entry of the kind leaves empty (nil: none).
	Defaults func(e *Entry)
	// Validate reports every rule the entry's keys break (nil: none).
	Validate func(e Entry) []Problem
	// URLUserIsSecret says the user part of the entry's url is a secret by itself (a NATS
	// token, nats://token@host), to hide when the configuration is printed, as its password
	// always is.
	URLUserIsSecret bool
}

// The registry is one of the module's few globals on purpose, as database/sql's drivers are: a
// kind's package registers it from init, so that importing the package is all a program does
// to link the kind and its clients.
var (
	mu    sync.RWMutex
	kinds = map[string]Kind{}
)

// builtin are the kinds of this module in the order the documentation lists them, with the
// package that registers each: the error of a kind the program did not link names its import.
var builtin = []struct{ name, pkg string }{
	{"file", "github.com/scribehook/scribehook/sinks"},
	{"webhook", "github.com/scribehook/scribehook/sinks"},
	{"redisstream", "github.com/scribehook/scribehook/sinks/redissink"},
	{"nats", "github.com/scribehook/scribehook/sinks/natssink"},
	{"blob", "github.com/scribehook/scribehook/sinks/blobsink"},
	{"log", "github.com/scribehook/scribehook/sinks"},
}

// Register records k. It panics when the name is empty or taken: two packages claiming one kind
// is a mistake of the program, found at start. Kinds register through sinks.RegisterKind,
// which also records their constructor.
func Register(k Kind) {
	mu.Lock()
	defer mu.Unlock()
	if k.Name == "" {
		panic("sinkkind: Register needs a kind name")
	}
	if _, dup := kinds[k.Name]; dup {
		panic("sinkkind: Register called twice for kind " + k.Name)
	}
	kinds[k.Name] = k
}

// Lookup is the registered kind of that name.
func Lookup(name string) (Kind, bool) {
	mu.RLock()
	defer mu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Names lists the registered kinds: this module's in the order of its documentation (file,
// webhook, redisstream, nats, blob, log), then the others sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out, others []string
	for _, b := range builtin {
		if _, ok := kinds[b.name]; ok {
			out = append(out, b.name)
		}
	}
	for name := range kinds {
		if !slices.ContainsFunc(builtin, func(b struct{ name, pkg string }) bool { return b.name == name }) {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	return append(out, others...)
}

// Import is the package of this module that registers the kind name, for the error of a kind
// the program does not link; false for a name this module has no kind of.
func Import(name string) (string, bool) {
	for _, b := range builtin {
		if b.name == name {
			return b.pkg, true
		}
	}
	return "", false
}
