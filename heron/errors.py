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

**The error table.** Every door answers an error as its class says, in five class
attributes (``HeronError`` holds the defaults): ``http_status`` (``/v1`` and every other
HTTP route), ``rpc_code`` (``/rpc``, listed by ``rpc.discover``), ``mcp_code`` (an MCP
request refused), ``openai_type`` (OpenAI's error ``type``) and ``retry_after`` (the
retry hint: ``Retry-After``, JSON-RPC's ``data.retry_after``). A subclass inherits its
parent's row and sets only what differs, so the most specific class wins. An error
defined in a capability sets its row where it is defined (``heron.keys``: a key's
refusals; ``heron.llm.errors``: a model's failures), never importing a door; one whose
answer depends on the instance sets it in ``__init__`` or as a property
(``ProviderError.rpc_code``). Adding an error is one class; adding a door, one function
reading these attributes, as ``heron_error`` does for HTTP.
"""


class HeronError(Exception):
    """Base of every error Heron raises on purpose, and the default row of the error
    table (the module docstring)."""

    #: The HTTP status a server answers it with: a failure on Heron's side unless a
    #: subclass says the request was at fault.
    http_status: int = 502
    #: Its JSON-RPC application error code (-32000 to -32099).
    rpc_code: int = -32000
    #: Its JSON-RPC code when an MCP request (a resource, a prompt, a list) is refused:
    #: invalid params (the name or URI asked for) unless a subclass says otherwise.
    mcp_code: int = -32602
    #: OpenAI's error ``type``; ``None``: the one its status has (``heron.server``).
    openai_type: str | None = None
    #: Seconds to wait before asking again; ``None``: the error does not say.
    retry_after: float | None = None


class ConfigError(HeronError):
    http_status = 400
    rpc_code = -32002


class ModelError(HeronError):
    rpc_code = -32003


class RemoteModelError(ModelError):
    pass


class InputError(HeronError, ValueError):
    http_status = 400
    rpc_code = -32001


class StoreError(HeronError):
    rpc_code = -32006


class NamespaceMismatch(StoreError):
    rpc_code = -32005


class NotFound(StoreError, KeyError):
    http_status = 404
    rpc_code = -32004

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DatabaseCorrupt(StoreError):
    pass


class DatabaseReadOnly(StoreError):
    pass


class DatabaseBusy(StoreError):
    pass
