// Package sqlstore is the engine.Driver of the SQL backends, over
// database/sql in two dialects: SQLite (store/sqlite) and PostgreSQL
// (store/postgres, through pgx's database/sql adapter). Queries are
// written once in PostgreSQL's placeholders and table placeholders, and
// expanded per dialect, as the runs layer does.
package sqlstore
