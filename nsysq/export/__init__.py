"""Reading an nsys SQLite export: checks, the schema across versions, the page decoder, the
columnar cache, the reader that picks between them, DuckDB connections and progress."""
