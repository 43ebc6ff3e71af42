"""An Iceberg REST catalogue for the tests of `table.catalog.url`: the REST API's
routes that a writer and a reader use, over pyiceberg's own SQL catalogue (its
namespace, table and commit logic: requirements checked, updates applied, metadata
written), in a SQLite file. No REST catalogue server can be installed here (the
maintained ones ship as containers or JVM jars); the HTTP layer is what this file adds.

    with RestCatalogue(directory, **file_io_properties) as rest:
        rest.url   # http://127.0.0.1:PORT, for --set table.catalog.url=...
"""

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pyiceberg.catalog.rest import CreateTableRequest, TableResponse
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (CommitFailedException, NamespaceAlreadyExistsError,
                                  NoSuchNamespaceError, NoSuchTableError,
                                  TableAlreadyExistsError)
from pyiceberg.table import CommitTableRequest
from sqlalchemy.exc import IntegrityError

# The error types of the REST specification, by exception.
ERRORS = {
    NoSuchNamespaceError: (404, "NoSuchNamespaceException"),
    NoSuchTableError: (404, "NoSuchTableException"),
    NamespaceAlreadyExistsError: (409, "AlreadyExistsException"),
    TableAlreadyExistsError: (409, "AlreadyExistsException"),
    CommitFailedException: (409, "CommitFailedException"),
    # Two brokers making the namespace at once: pyiceberg checks, then inserts.
    IntegrityError: (409, "AlreadyExistsException"),
}


def error_of(e):
    """The REST status and error type of exception `e`, if it is one of ERRORS."""
    for kind, answer in ERRORS.items():
        if isinstance(e, kind):
            return answer
    return None


class RestCatalogue:
    def __init__(self, directory, **properties):
        self.catalog = SqlCatalog("rest", uri=f"sqlite:///{directory}/rest-catalogue.db",
                                  **properties)
        self.token = None  # when set, requests must bear it
        self.credential = None  # (client_id, secret) exchanged for the token
        self.requests = []  # (method, path) of each request
        self.failures = []  # what the server failed on (answered 500)
        # One request at a time, as the SQLite file behind it takes them.
        self.lock = threading.Lock()

        catalogue = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self.route("GET")

            def do_HEAD(self):
                self.route("HEAD")

            def do_POST(self):
                self.route("POST")

            def route(self, method):
                path = urllib.parse.urlparse(self.path).path
                catalogue.requests.append((method, path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if path == "/v1/oauth/tokens" and method == "POST":
                    return self.answer(*catalogue.oauth(body))
                if catalogue.token and self.headers.get("Authorization") != f"Bearer {catalogue.token}":
                    return self.answer(401, error(401, "NotAuthorizedException", "no token"))
                try:
                    with catalogue.lock:
                        status, answer = catalogue.serve(method, path, body)
                except Exception as e:  # noqa: BLE001 - answered, as a server does
                    known = error_of(e)
                    if known:
                        status, answer = known[0], error(known[0], known[1], str(e))
                    else:
                        catalogue.failures.append(repr(e))
                        status, answer = 500, error(500, "ServerError", repr(e))
                self.answer(status, answer, head=method == "HEAD")

            def answer(self, status, answer, head=False):
                data = b"" if answer is None or head else (
                    answer if isinstance(answer, bytes) else json.dumps(answer).encode())
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def oauth(self, body):
        """OAuth2's client-credentials grant, as the REST specification's token endpoint."""
        asked = dict(urllib.parse.parse_qsl(body.decode()))
        if (self.credential is None or asked.get("grant_type") != "client_credentials"
                or (asked.get("client_id"), asked.get("client_secret")) != self.credential):
            return 401, {"error": "invalid_client", "error_description": "unknown client"}
        return 200, {"access_token": self.token, "token_type": "bearer", "expires_in": 3600,
                     "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}

    def serve(self, method, path, body):
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        if parts[:1] != ["v1"]:
            return 404, error(404, "NotFound", path)
        parts = parts[1:]
        if parts == ["config"]:
            return 200, {"defaults": {}, "overrides": {}}
        if parts == ["namespaces"] and method == "GET":
            return 200, {"namespaces": [list(n) for n in self.catalog.list_namespaces()]}
        if parts == ["namespaces"] and method == "POST":
            asked = json.loads(body)
            self.catalog.create_namespace(tuple(asked["namespace"]), asked.get("properties") or {})
            return 200, {"namespace": asked["namespace"], "properties": asked.get("properties") or {}}
        if len(parts) == 2 and parts[0] == "namespaces":
            namespace = tuple(parts[1].split("\x1f"))
            properties = self.catalog.load_namespace_properties(namespace)
            if method == "HEAD":
                return 204, None
            return 200, {"namespace": list(namespace), "properties": properties}
        if len(parts) == 3 and parts[0] == "namespaces" and parts[2] == "tables":
            namespace = tuple(parts[1].split("\x1f"))
            if method == "GET":
                return 200, {"identifiers": [{"namespace": list(t[:-1]), "name": t[-1]}
                                             for t in self.catalog.list_tables(namespace)]}
            # The specification's optional fields, which pyiceberg's model wants named.
            fields = {"location": None, "partition-spec": None, "write-order": None,
                      **json.loads(body)}
            asked = CreateTableRequest.model_validate(fields)
            table = self.catalog.create_table(namespace + (asked.name,), asked.table_schema,
                                              location=asked.location,
                                              properties=asked.properties)
            return 200, loaded(table)
        if len(parts) == 4 and parts[0] == "namespaces" and parts[2] == "tables":
            identifier = tuple(parts[1].split("\x1f")) + (parts[3],)
            table = self.catalog.load_table(identifier)
            if method == "HEAD":
                return 204, None
            if method == "GET":
                return 200, loaded(table)
            asked = CommitTableRequest.model_validate_json(body)
            done = self.catalog.commit_table(table, asked.requirements, asked.updates)
            return 200, done.model_dump_json().encode()
        return 404, error(404, "NotFound", path)

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def loaded(table):
    return TableResponse(**{"metadata-location": table.metadata_location,
                            "metadata": table.metadata, "config": {}}).model_dump_json().encode()


def error(code, kind, message):
    return {"error": {"message": message, "type": kind, "code": code}}

