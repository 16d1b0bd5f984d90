#!/usr/bin/env python3
"""Echo server for the faketime test of wap5 skew: answers each 8-byte request
at once and logs "recv ID T" and "send ID T" (T = time.time_ns(), its own
clock, which libfaketime may shift) to LOG. Usage: server.py PORTFILE LOG"""
import os, socket, struct, sys, time

port_file, log_path = sys.argv[1], sys.argv[2]
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((os.environ.get("WAP5_FT_ADDR", "127.0.0.1"), 0))
ls.listen(1)
with open(port_file + ".tmp", "w") as f:
    f.write(str(ls.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
c, _ = ls.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
out = []
buf = b""
while True:
    d = c.recv(8 - len(buf))
    if not d:
        break
    buf += d
    if len(buf) < 8:
        continue
    t = time.time_ns()
    (i,) = struct.unpack("!q", buf)
    buf = b""
    out.append("recv %d %d" % (i, t))
    t = time.time_ns()
    c.sendall(struct.pack("!q", i))
    out.append("send %d %d" % (i, t))
c.close()
with open(log_path, "w") as f:
    f.write("\n".join(out) + "\n")
