// Package configs loads scribehook's configuration: built-in defaults, then one YAML file,
// then environment overrides, then validation that reports every problem at once.
//
// # Layers
//
// Load starts from ServeDefaults, the scribehook binary's (which runs with no file at all:
// SQLite in the working directory, the in-process bus, SRT and WebVTT under ./artifacts, a file
// sink under ./out), applies the YAML file when one is given, then the environment. A program
// that builds a kit starts from Default instead: the same keys, with nothing written that the
// program does not configure (store.dsn is its to give, no sink, no subtitles); LoadOnto
// applies a file and the environment over it. The file is strict: a key the configuration does not have is an error that
// names its path and line, with a suggestion when a known key is close; a value of the wrong
// type names its key.
//
// # Environment overrides
//
// Every scalar key can be overridden by SCRIBEHOOK_ followed by its path in upper case joined
// by "_": SCRIBEHOOK_LISTEN, SCRIBEHOOK_SERVICE_BASE_URL, SCRIBEHOOK_STORE_DSN. Elements of a
// list are addressed by index (SCRIBEHOOK_ROUTES_0_TOKEN_ENV); an index one past the end
// appends an element. A list of strings takes a comma-separated value
// (SCRIBEHOOK_SUBTITLES_FORMATS=srt,vtt). An empty variable counts as unset.
//
// Only variables whose name is exactly such a path are overrides. The secrets themselves live
// in variables that often share the prefix — SCRIBEHOOK_API_KEY, SCRIBEHOOK_READ_TOKEN,
// SCRIBEHOOK_ACCOUNT_TOKEN — and those are not configuration keys: they are read only by
// Config.Secrets, through the *_env keys that name them, and they are never an error here.
//
// # Secrets
//
// The YAML file never holds a secret, only the names of the environment variables that do
// (api_key_env, read_token_env, token_env, signing_secret_env, secret_env). Config.Secrets
// resolves them; a variable NAME may instead be given as NAME_FILE, the path of a file holding
// the value (for container secrets). Neither Config nor Secrets prints a secret: String of
// Config hides URL passwords, and Secrets only says which secrets are set.
package configs
