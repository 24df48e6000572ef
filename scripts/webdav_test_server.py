"""A WebDAV server for Coffer's source-connector tests: WsgiDAV on cheroot, 127.0.0.1 only.

    webdav_test_server.py STATE_DIR USER PASSWORD

Serves STATE_DIR/root as the share /dav twice, on two ports the kernel picks: one that asks for
HTTP Basic authentication and one that asks for Digest (MD5, qop=auth). Both have locking (DAV
class 2). Writes "BASIC_PORT DIGEST_PORT" to STATE_DIR/ports once both listen; stops on SIGTERM.
Started by scripts/webdav-test-server.sh.
"""

import os
import signal
import sys
import threading

from cheroot import wsgi
from wsgidav.wsgidav_app import WsgiDAVApp


def app(root, user, password, digest):
    return WsgiDAVApp(
        {
            "provider_mapping": {"/dav": root},
            "simple_dc": {"user_mapping": {"*": {user: {"password": password}}}},
            "http_authenticator": {
                "accept_basic": not digest,
                "accept_digest": digest,
                "default_to_digest": digest,
            },
            "lock_storage": True,
            "verbose": 1,
            "logging": {"enable_loggers": []},
            "dir_browser": {"enable": False},
        }
    )


def main():
    state, user, password = sys.argv[1:4]
    root = os.path.join(state, "root")
    os.makedirs(root, exist_ok=True)
    servers = []
    for digest in (False, True):
        server = wsgi.Server(("127.0.0.1", 0), app(root, user, password, digest))
        server.prepare()
        servers.append(server)
    for server in servers:
        threading.Thread(target=server.serve, daemon=True).start()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ports = " ".join(str(s.bind_addr[1]) for s in servers)
    with open(os.path.join(state, "ports.tmp"), "w") as f:
        f.write(ports + "\n")
    os.rename(os.path.join(state, "ports.tmp"), os.path.join(state, "ports"))
    stop.wait()
    for server in servers:
        server.stop()


if __name__ == "__main__":
    main()
