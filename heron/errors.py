"""Heron's exceptions. Every error a user can meet says what happened and what to do.

HeronError
 ├── ConfigError            bad settings or configuration files
 ├── ModelError             the embedding model is missing, corrupt or failing
 │    └── RemoteModelError  an embedding server answered badly or not at all
 ├── InputError             records, vectors or files that cannot be accepted
 └── StoreError             the store refused or failed an operation
      ├── NamespaceMismatch a namespace built with another model or dimension
      ├── NotFound          an id or namespace that does not exist
      ├── DatabaseCorrupt   a SQLite file that is damaged, truncated or not a database
      ├── DatabaseReadOnly  a SQLite file (or its folder) this user may not write
      └── DatabaseBusy      another process held a SQLite file's lock past the timeout

``heron.db.sqlite`` turns every ``sqlite3`` error into the last three (or a plain
``StoreError``), naming the file and the fix.
"""


class HeronError(Exception):
    """Base of every error Heron raises on purpose."""


class ConfigError(HeronError):
    pass


class ModelError(HeronError):
    pass


class RemoteModelError(ModelError):
    pass


class InputError(HeronError, ValueError):
    pass


class StoreError(HeronError):
    pass


class NamespaceMismatch(StoreError):
    pass


class NotFound(StoreError, KeyError):
    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DatabaseCorrupt(StoreError):
    pass


class DatabaseReadOnly(StoreError):
    pass


class DatabaseBusy(StoreError):
    pass
