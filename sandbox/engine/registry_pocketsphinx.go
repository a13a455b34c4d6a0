//go:build pocketsphinx

package engine

// registerBuiltins adds the pocketsphinx engine with its default options (the Debian model
// paths, a decoder a CPU). The factory only runs when the engine is asked for, so a binary
// built with the tag still starts, and lists the engine, on a machine without the model; New
// then reports the missing files.
func registerBuiltins(r *Registry) {
	_ = r.Register(PocketsphinxName, func() (Engine, error) { return NewPocketsphinx(PocketsphinxOptions{}) })
}
