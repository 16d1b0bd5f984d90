#!/usr/bin/env python3
"""The demo's application server: an HTTP upstream for nginx that answers
GET /api/<key> from a Redis cache, speaking RESP over one persistent
connection: GET the item; on a miss, build it (a few milliseconds of work)
and SET it; then INCR its hit counter. So the first request for each key
takes a longer path than the ones after it.

    demo_app.py PORT REDIS_PORT

One thread per request (ThreadingHTTPServer), Redis connections from a
pool (one per request in flight, kept open), so that concurrent requests
overlap in the app.

Standard library only, so that it runs on a fresh machine.
"""
import http.server
import socket
import queue
import sys
import time


class Redis:
    def __init__(self, port):
        self.port = port
        self.sock = None
        self.buf = b""

    def _connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def command(self, *args):
        if self.sock is None:
            self._connect()
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(parts))
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b":":
            return int(rest)
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        key = self.path.rsplit("/", 1)[-1]
        pool = self.server.pool
        try:
            redis = pool.get_nowait()
        except queue.Empty:
            redis = Redis(self.server.redis_port)
        try:
            value = redis.command("GET", "item:" + key)
            if value is None:
                value = build(key)
                redis.command("SET", "item:" + key, value)
            hits = redis.command("INCR", "hits:" + key)
        finally:
            pool.put(redis)
        body = value + b"\nhits %d\n" % hits
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def build(key):
    """The expensive part a cache saves: ~3 ms of CPU, a body of a size that
    depends on the key."""
    end = time.perf_counter() + 0.003
    n = 0
    while time.perf_counter() < end:
        n += 1
    size = 500 * (1 + sum(key.encode()) % 7)
    return (key.encode() + b" ") * (size // (len(key) + 1))


def main():
    port, redis_port = int(sys.argv[1]), int(sys.argv[2])
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.pool = queue.LifoQueue()
    srv.redis_port = redis_port
    srv.serve_forever()


if __name__ == "__main__":
    main()
