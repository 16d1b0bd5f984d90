#!/usr/bin/env python3
"""Workload of the reconcile testbed (scripts/testbed.sh): small real servers
and a client, each recording what it sent (the ground truth the integration
test compares `wap5 reconcile` with) and the servers their own timings.

Roles (argv[1]):
  fork-server  NODE PORT TRUTH         TCP; accept, fork, the child serves the connection
  thread-server NODE PORT UNIXPATH TRUTH TCP; one thread per connection; every request
                                       first calls the Unix-socket helper, then replies
  front-server NODE PORT BACKIP BACKPORT BACKNAME TRUTH
                                       TCP, forking; the child connects once to the back
                                       server and calls it for every request, then replies
  unix-helper  NODE PATH TRUTH         Unix stream server answering each call
  udp-server   NODE PORT TRUTH         UDP; answers each datagram
  client       NODE TRUTH SPEC...      SPEC = tcp:NAME:IP:PORT:CONNS:REQS or
                                       udp:NAME:IP:PORT:REQS (NAME: node that serves it)

Framing: every message is a 4-byte big-endian length and that many bytes, sent
with one sendall; request and reply alternate, so each is one logical message.
A reply's size is derived from the request's. The truth files hold one JSON
object per message sent: {"src","dst","bytes","proto","t_ns"}; server timing
records {"timing":..,"recv_ns","send_ns",...}; servers that call downstream
also record "call_ns" (just before the call) and "ret_ns" (its reply received),
and "caller" ("client" or "front": who sent the request, told by its first
byte, since the masquerade hides the address).

TESTBED_FORK_RACE=1 (environment): the forking server's parent closes its copy
of an accepted connection only after its child has read the length of the
first request and before it reads the body (the interleaving that a busy
machine produces now and then), to reproduce it at will.

TESTBED_WORK_MS (environment, default 0): before every send a server sleeps
uniform(0.5, 1.5) x that many ms — service time, so that node delays are large
against the few microseconds between a timing record and the system call.
"""
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

lock = threading.Lock()


class Truth:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def sent(self, src, dst, n, proto):
        with lock:
            self.f.write(json.dumps({"src": src, "dst": dst, "bytes": n, "proto": proto,
                                     "t_ns": time.time_ns()}) + "\n")

    def timing(self, **kw):
        with lock:
            self.f.write(json.dumps(dict(timing=True, **kw)) + "\n")


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return bytes(b)


def recv_msg(s):
    (n,) = struct.unpack(">I", recv_exact(s, 4))
    return recv_exact(s, n)


def recv_msg_t(s, pause=0.0):
    """recv_msg, and the time its first bytes arrived (as a tracer sees it);
    pause seconds between reading the length and the body."""
    (n,) = struct.unpack(">I", recv_exact(s, 4))
    t = time.time_ns()
    if pause:
        time.sleep(pause)
    return recv_exact(s, n), t


def send_msg(s, body):
    s.sendall(struct.pack(">I", len(body)) + body)
    return 4 + len(body)


FORK_RACE = os.environ.get("TESTBED_FORK_RACE", "") == "1"
WORK_MS = float(os.environ.get("TESTBED_WORK_MS", "0") or 0)
work_rnd = random.Random(os.getpid())


def work():
    if WORK_MS > 0:
        with lock:
            d = work_rnd.uniform(0.5, 1.5) * WORK_MS / 1000
        time.sleep(d)


def caller_of(req):
    return "front" if req[:1] == b"f" else "client"


def reply_for(req):
    return bytes([0x72]) * (len(req) * 3 % 900 + 10)


def peer_node(addr, peers):
    return peers.get(addr[0], addr[0])


def parse_peers(spec):
    # "10.200.1.2=c,10.200.3.1=c"
    out = {}
    for kv in filter(None, spec.split(",")):
        k, v = kv.split("=")
        out[k] = v
    return out


def fork_server(node, port, truth_path):
    peers = parse_peers(os.environ.get("TESTBED_PEERS", ""))
    truth = Truth(truth_path)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        c, addr = ls.accept()
        if os.fork() == 0:
            ls.close()
            pause = 0.05 if FORK_RACE else 0.0
            try:
                while True:
                    req, t_recv = recv_msg_t(c, pause)
                    pause = 0.0
                    rep = reply_for(req)
                    work()
                    # The message is recorded before sending: once the client
                    # has its reply, the testbed may stop this server at any
                    # time. The timing record follows the send, so that
                    # send_ns is taken right before it (the testbed waits
                    # 0.3 s before stopping servers).
                    truth.sent(node, peer_node(addr, peers), 4 + len(rep), "tcp")
                    t_send = time.time_ns()
                    send_msg(c, rep)
                    truth.timing(server="fork", recv_ns=t_recv, send_ns=t_send, req=4 + len(req), rep=4 + len(rep))
            except EOFError:
                pass
            c.close()
            os._exit(0)
        if FORK_RACE:
            time.sleep(0.02)
        c.close()


def thread_server(node, port, upath, truth_path):
    peers = parse_peers(os.environ.get("TESTBED_PEERS", ""))
    truth = Truth(truth_path)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)

    def serve(c, addr):
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.connect(upath)
        try:
            while True:
                req, t_recv = recv_msg_t(c)
                caller = caller_of(req)
                # The helper learns who called through the first byte.
                body = (b"v" if caller == "front" else b"u") * (len(req) % 200 + 5)
                work()
                truth.sent(node, node, 4 + len(body), "unix")
                t_call = time.time_ns()
                send_msg(u, body)
                _, t_ret = recv_msg_t(u)
                rep = reply_for(req)
                work()
                peer = "s1" if caller == "front" else peer_node(addr, peers)
                truth.sent(node, peer, 4 + len(rep), "tcp")
                t_send = time.time_ns()
                send_msg(c, rep)
                truth.timing(server="thread", caller=caller, recv_ns=t_recv, call_ns=t_call, ret_ns=t_ret,
                             send_ns=t_send, req=4 + len(req), rep=4 + len(rep))
        except EOFError:
            pass
        c.close()
        u.close()

    while True:
        c, addr = ls.accept()
        threading.Thread(target=serve, args=(c, addr), daemon=True).start()


def unix_helper(node, path, truth_path):
    truth = Truth(truth_path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(64)

    def serve(c):
        try:
            while True:
                req, t_recv = recv_msg_t(c)
                work()
                truth.sent(node, node, 4 + len(req) + 7, "unix")
                t_send = time.time_ns()
                send_msg(c, b"h" * (len(req) + 7))
                truth.timing(server="helper", caller="front" if req[:1] == b"v" else "client",
                             recv_ns=t_recv, send_ns=t_send, req=4 + len(req), rep=4 + len(req) + 7)
        except EOFError:
            pass
        c.close()

    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def front_server(node, port, back_ip, back_port, back_name, truth_path):
    peers = parse_peers(os.environ.get("TESTBED_PEERS", ""))
    truth = Truth(truth_path)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        c, addr = ls.accept()
        if os.fork() == 0:
            ls.close()
            b = socket.create_connection((back_ip, back_port), timeout=10)
            try:
                while True:
                    req, t_recv = recv_msg_t(c)
                    call = b"f" * (len(req) * 7 % 1500 + 20)
                    work()
                    truth.sent(node, back_name, 4 + len(call), "tcp")
                    t_call = time.time_ns()
                    send_msg(b, call)
                    _, t_ret = recv_msg_t(b)
                    rep = reply_for(req)
                    work()
                    truth.sent(node, peer_node(addr, peers), 4 + len(rep), "tcp")
                    t_send = time.time_ns()
                    send_msg(c, rep)
                    truth.timing(server="front", recv_ns=t_recv, call_ns=t_call, ret_ns=t_ret, send_ns=t_send,
                                 req=4 + len(req), rep=4 + len(rep))
            except EOFError:
                pass
            c.close()
            b.close()
            os._exit(0)
        c.close()


def udp_server(node, port, truth_path):
    peers = parse_peers(os.environ.get("TESTBED_PEERS", ""))
    truth = Truth(truth_path)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    while True:
        d, addr = s.recvfrom(65536)
        t_recv = time.time_ns()
        rep = b"d" * (len(d) * 2 % 700 + 3)
        work()
        truth.sent(node, peer_node(addr, peers), len(rep), "udp")
        t_send = time.time_ns()
        s.sendto(rep, addr)
        truth.timing(server="udp", recv_ns=t_recv, send_ns=t_send, req=len(d), rep=len(rep))


def client(node, truth_path, specs):
    truth = Truth(truth_path)
    rnd = random.Random(int(os.environ.get("TESTBED_SEED", "5")))
    for spec in specs:
        f = spec.split(":")
        if f[0] == "tcp":
            _, name, ip, port, conns, reqs = f
            for _ in range(int(conns)):
                s = socket.create_connection((ip, int(port)), timeout=10)
                for _ in range(int(reqs)):
                    n = send_msg(s, bytes([0x71]) * rnd.randrange(1, 3000))
                    truth.sent(node, name, n, "tcp")
                    recv_msg(s)
                s.close()
        elif f[0] == "udp":
            _, name, ip, port, reqs = f
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(5)
            for i in range(int(reqs)):
                body = bytes([0x30 + i % 10]) * rnd.randrange(1, 1200)
                s.sendto(body, (ip, int(port)))
                truth.sent(node, name, len(body), "udp")
                s.recvfrom(65536)
            s.close()


def main():
    role, args = sys.argv[1], sys.argv[2:]
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    # A thread that returns from a system call waits for the GIL before it can
    # read the clock; the default 5 ms switch interval would skew the
    # servers' own timings of threaded servers by milliseconds.
    sys.setswitchinterval(0.0001)
    if role == "fork-server":
        fork_server(args[0], int(args[1]), args[2])
    elif role == "thread-server":
        thread_server(args[0], int(args[1]), args[2], args[3])
    elif role == "unix-helper":
        unix_helper(args[0], args[1], args[2])
    elif role == "front-server":
        front_server(args[0], int(args[1]), args[2], int(args[3]), args[4], args[5])
    elif role == "udp-server":
        udp_server(args[0], int(args[1]), args[2])
    elif role == "client":
        client(args[0], args[1], args[2:])
    else:
        sys.exit("unknown role " + role)


if __name__ == "__main__":
    main()
