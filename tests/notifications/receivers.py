"""Real receivers on 127.0.0.1 for the notification tests: a minimal SMTP server (the commands Python's
smtplib sends: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT) and an HTTP server standing for Slack's
incoming webhooks, each in its own thread; and a port where nothing listens (a receiver that is down)."""

from __future__ import annotations

import email
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Mail:
    sender: str
    recipients: list[str]
    message: email.message.Message


@dataclass
class Inbox:
    mails: list[Mail] = field(default_factory=list)
    posts: list[dict] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # the next answers of the HTTP receiver; then 200


class _SMTPHandler(socketserver.StreamRequestHandler):
    timeout = 30

    def handle(self) -> None:
        inbox: Inbox = self.server.inbox
        self._say("220 127.0.0.1 test SMTP")
        sender, recipients = "", []
        while line := self.rfile.readline():
            verb, _, argument = line.decode().strip().partition(" ")
            verb = verb.upper()
            if verb in ("EHLO", "HELO"):
                self._say("250 127.0.0.1")
            elif verb == "MAIL":
                sender, recipients = argument.split(":", 1)[1].strip().strip("<>"), []
                self._say("250 OK")
            elif verb == "RCPT":
                recipients.append(argument.split(":", 1)[1].strip().strip("<>"))
                self._say("250 OK")
            elif verb == "DATA":
                self._say("354 end with <CRLF>.<CRLF>")
                inbox.mails.append(Mail(sender, recipients, email.message_from_bytes(self._data())))
                self._say("250 queued")
            elif verb in ("RSET", "NOOP"):
                self._say("250 OK")
            elif verb == "QUIT":
                self._say("221 bye")
                return
            else:
                self._say("502 not implemented")

    def _data(self) -> bytes:
        lines = []
        while (line := self.rfile.readline()) not in (b".\r\n", b".\n", b""):
            lines.append(line[1:] if line.startswith(b"..") else line)
        return b"".join(lines)

    def _say(self, text: str) -> None:
        self.wfile.write(f"{text}\r\n".encode())


class _SMTPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class _WebhookHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        inbox: Inbox = self.server.inbox
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        inbox.posts.append({"path": self.path, "body": json.loads(body or b"null")})
        status = inbox.statuses.pop(0) if inbox.statuses else 200
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:  # quiet
        pass


@contextmanager
def _serving(server, inbox: Inbox) -> Iterator[tuple[int, Inbox]]:
    server.inbox = inbox
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], inbox
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def smtp_server() -> Iterator[tuple[int, Inbox]]:
    with _serving(_SMTPServer(("127.0.0.1", 0), _SMTPHandler), Inbox()) as served:
        yield served


@contextmanager
def webhook_server() -> Iterator[tuple[int, Inbox]]:
    with _serving(ThreadingHTTPServer(("127.0.0.1", 0), _WebhookHandler), Inbox()) as served:
        yield served


def closed_port() -> int:
    """A loopback port where nothing listens: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
