#!/usr/bin/env python3
"""Client for the faketime test of wap5 skew: N request/reply round trips,
INTERVAL seconds apart. Logs "send ID T RAW" and "recv ID T RAW": T is
time.time_ns() (libc's clock_gettime, which libfaketime shifts), RAW the
real time from the clock_gettime system call itself, which libfaketime does
not see: the ground truth of this process's clock error.
Usage: client.py PORTFILE LOG N INTERVAL"""
import ctypes, os, socket, struct, sys, time

port_file, log_path, n, interval = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])


class Timespec(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]


libc = ctypes.CDLL(None, use_errno=True)
SYS_clock_gettime = {"x86_64": 228, "aarch64": 113}[os.uname().machine]


def raw():
    ts = Timespec()
    if libc.syscall(SYS_clock_gettime, 0, ctypes.byref(ts)) != 0:
        raise OSError(ctypes.get_errno(), "clock_gettime syscall")
    return ts.s * 1000000000 + ts.ns


for _ in range(500):
    if os.path.exists(port_file):
        break
    time.sleep(0.01)
port = int(open(port_file).read())
s = socket.create_connection((os.environ.get("WAP5_FT_ADDR", "127.0.0.1"), port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
out = []
for i in range(n):
    r0, t0 = raw(), time.time_ns()
    s.sendall(struct.pack("!q", i))
    out.append("send %d %d %d" % (i, t0, r0))
    buf = b""
    while len(buf) < 8:
        d = s.recv(8 - len(buf))
        if not d:
            sys.exit("server closed early")
        buf += d
    t1, r1 = time.time_ns(), raw()
    out.append("recv %d %d %d" % (i, t1, r1))
    time.sleep(interval)
s.close()
with open(log_path, "w") as f:
    f.write("\n".join(out) + "\n")
