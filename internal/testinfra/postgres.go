package testinfra

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", the one store/postgres uses

	"github.com/scribehook/scribehook/internal/netguard"
)

// EnvPGDSN names the PostgreSQL database tests may use; scripts/pg.sh sets it to a throwaway
// cluster. Each test works in a schema of its own in it, so tests never see each other's rows.
const EnvPGDSN = "SCRIBEHOOK_TEST_PG_DSN"

// Schema is a schema made for one test or run in the database of a DSN.
type Schema struct {
	Name string
	// DSN is the database's DSN with search_path set to the schema: a store opened on it sees
	// an empty database of its own.
	DSN string
	// DB is a pool on DSN, for checks beside the store's own pools; Drop closes it.
	DB *sql.DB
}

// prefixRE keeps schema names plain identifiers: they are put into SQL as they are.
var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// NewSchema connects to dsn, creates a schema named prefix_<random>, and returns it. A random
// suffix, not a counter: runs and test binaries running at once share the database.
func NewSchema(ctx context.Context, dsn, prefix string) (*Schema, error) {
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("schema prefix %q: want lower-case letters, digits and _", prefix)
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("schema name: %w", err)
	}
	name := prefix + "_" + hex.EncodeToString(rnd[:])
	schemaDSN, err := WithSearchPath(dsn, name)
	if err != nil {
		return nil, err
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL (%s): %w", RedactDSN(dsn), err)
	}
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	db, err := sql.Open("pgx", schemaDSN)
	if err != nil {
		_, _ = admin.ExecContext(ctx, "DROP SCHEMA "+name+" CASCADE")
		return nil, fmt.Errorf("open PostgreSQL: %w", err)
	}
	return &Schema{Name: name, DSN: schemaDSN, DB: db}, nil
}

// Drop removes the schema and everything in it, and closes DB.
func (s *Schema) Drop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := s.DB.ExecContext(ctx, "DROP SCHEMA "+s.Name+" CASCADE")
	if cerr := s.DB.Close(); err == nil && cerr != nil {
		return fmt.Errorf("close PostgreSQL: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", s.Name, err)
	}
	return nil
}

// WithSearchPath sets the search_path parameter of a URL or key=value DSN.
func WithSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			// url.Error quotes the DSN, password and all: say only what is wrong.
			return "", fmt.Errorf("parse the PostgreSQL DSN: %w", netguard.StripURLError(err))
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " search_path=" + schema, nil
}

// RedactDSN hides a URL DSN's password, for messages.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	return dsn
}
