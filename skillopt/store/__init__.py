"""The store: the SQLite writer and its migrations, the read-only reader, and exports.
Import the modules themselves; nothing is re-exported."""
