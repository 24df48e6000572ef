"""A throwaway SMTP server for Coffer's mail tests (started by scripts/smtp-test-server.sh).

    python smtp_test_server.py DIR USER PASSWORD [CERT KEY]

Listens on 127.0.0.1 on two spare ports: a plain server that requires AUTH (PLAIN or LOGIN,
allowed without TLS), and, when a certificate and key are given, a server that requires STARTTLS
before AUTH. Writes `plain_port starttls_port` to DIR/ports when both listen, and every message
it accepts to DIR/messages/<n>.json: {mailFrom, rcptTos, login, tls, data}, `data` being the
message as received. Recipients whose local part starts with `tempfail` are refused with 451,
those starting with `reject` with 550. Runs until SIGTERM or SIGINT.
"""

import itertools
import json
import os
import signal
import socket
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def spare_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Recorder:
    def __init__(self, directory):
        self.directory = directory
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        local = address.split("@", 1)[0].lower()
        if local.startswith("tempfail"):
            return "451 4.3.0 Mailbox busy, try again later"
        if local.startswith("reject"):
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            n = next(self.counter)
        record = {
            "mailFrom": envelope.mail_from,
            "rcptTos": envelope.rcpt_tos,
            "login": session.auth_data if isinstance(session.auth_data, str) else None,
            "tls": session.ssl is not None,
            "data": envelope.original_content.decode("utf-8", "replace"),
        }
        path = os.path.join(self.directory, "%06d-%d.json" % (n, os.getpid()))
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(path + ".tmp", path)
        return "250 Message accepted for delivery"


class Authenticator:
    def __init__(self, user, password):
        self.user = user
        self.password = password

    def __call__(self, server, session, envelope, mechanism, auth_data):
        if (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == self.user
            and auth_data.password.decode() == self.password
        ):
            return AuthResult(success=True, auth_data=self.user)
        return AuthResult(success=False, handled=False)


def main():
    directory, user, password = sys.argv[1:4]
    messages = os.path.join(directory, "messages")
    os.makedirs(messages, exist_ok=True)
    handler = Recorder(messages)
    auth = Authenticator(user, password)
    controllers = []
    plain = Controller(
        handler,
        hostname="127.0.0.1",
        port=spare_port(),
        authenticator=auth,
        auth_required=True,
        auth_require_tls=False,
    )
    plain.start()
    controllers.append(plain)
    starttls_port = 0
    if len(sys.argv) >= 6:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(sys.argv[4], sys.argv[5])
        secure = Controller(
            handler,
            hostname="127.0.0.1",
            port=spare_port(),
            authenticator=auth,
            auth_required=True,
            tls_context=context,
            require_starttls=True,
        )
        secure.start()
        controllers.append(secure)
        starttls_port = secure.port
    with open(os.path.join(directory, "ports.tmp"), "w") as f:
        f.write("%d %d\n" % (plain.port, starttls_port))
    os.replace(os.path.join(directory, "ports.tmp"), os.path.join(directory, "ports"))

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    for c in controllers:
        c.stop()


if __name__ == "__main__":
    main()
