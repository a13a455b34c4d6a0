//go:build !pocketsphinx

package engine

import "errors"

// NewPocketsphinx fails in a build without the pocketsphinx tag: the engine needs cgo and
// the C libraries of Debian's libpocketsphinx-dev, which a default build must not require.
func NewPocketsphinx(PocketsphinxOptions) (Engine, error) {
	return nil, errors.New("engine: pocketsphinx is not in this build: build with -tags pocketsphinx " +
		"(needs cgo and the Debian packages libpocketsphinx-dev pocketsphinx-en-us pkgconf)")
}

// registerBuiltins adds the engines that depend on build tags; this build has none.
func registerBuiltins(*Registry) {}
