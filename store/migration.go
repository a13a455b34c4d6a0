package store

// Migration is one schema migration a store embeds. Migrations only go forward: each is
// applied once, in version order, and none is ever undone.
type Migration struct {
	Version int
	// Name is the migration's file name (0005_sink_state.sql).
	Name string
	// Summary is the first line of the comment the migration starts with: what it does.
	Summary string
}

// MigrationPlan says what opening a database will do to its schema, before anything is done:
// the sqlite and postgres packages' PendingMigrations make one, `scribehook migrate --check`
// prints it.
type MigrationPlan struct {
	// Current is the database's schema version, the latest migration it has applied; 0 for a
	// new database.
	Current int
	// Latest is the latest migration this binary embeds.
	Latest int
	// Pending are the migrations that will run, in order; none when the schema is current.
	Pending []Migration
}
