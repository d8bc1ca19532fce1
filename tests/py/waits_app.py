"""Every kind of wait the analysis knows, each about 4 ms, inside a step:
sleep, select, poll, epoll, a lock, an RLock, a SimpleQueue, a
multiprocessing lock, a child waited for, a pipe read, a socket's recv,
recv_into, recvfrom, recvfrom_into and accept, a thread joined, and a TLS
client's connection (connect, its handshake and its read of the answer,
which a server thread sends D after the request).  Prints the share of the
steps' time spent inside the waits, by perf_counter around each (a
thread's start, which waits for it to run, counted with them: what it does
besides is a few per cent of the step)."""
import os
import queue
import select
import socket
import ssl
import sys
import threading
import time
import multiprocessing
import warnings

# the child forked below only sleeps: the server thread beside it (3.12
# warns of any) is no matter
warnings.filterwarnings("ignore", "This process", DeprecationWarning)

D = 0.004
inside = [0]


def later(f):
    """f() D from now, on a thread of its own (whose start is waited for:
    threading's Thread.start waits until the thread runs)"""
    t = threading.Timer(D, f)
    w(t.start)
    return t


def w(f, *a, **k):
    t = time.perf_counter_ns()
    r = f(*a, **k)
    inside[0] += time.perf_counter_ns() - t
    return r


# a TLS server on a thread of its own: each connection's request answered
# D later (a self-signed certificate for localhost, tls.pem beside this)
PEM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tls.pem")
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
sctx.load_cert_chain(PEM)
cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
cctx.load_verify_locations(PEM)


def serve():
    while True:
        conn, _ = srv.accept()
        with sctx.wrap_socket(conn, server_side=True) as s:
            if s.recv(1) == b"q":
                return
            time.sleep(D)
            s.sendall(b"y")


def tls_request():
    c = w(socket.create_connection, srv.getsockname())
    s = w(cctx.wrap_socket, c, server_hostname="localhost")
    s.sendall(b"x")
    w(s.recv, 1)
    s.close()


def step():
    w(time.sleep, D)
    w(select.select, [], [], [], D)
    p = select.poll()
    w(p.poll, D * 1000)
    e = select.epoll()
    w(e.poll, D)
    e.close()
    lk = threading.Lock()
    lk.acquire()
    w(lk.acquire, True, D)
    rl = threading.RLock()
    t = threading.Thread(target=rl.acquire)
    w(t.start)
    w(t.join)
    w(rl.acquire, True, D)
    sq = queue.SimpleQueue()
    try:
        w(sq.get, True, D)
    except queue.Empty:
        pass
    ml = multiprocessing.Lock()
    ml.acquire()
    w(ml.acquire, True, D)
    pid = os.fork()
    if pid == 0:
        time.sleep(D)
        os._exit(0)
    w(os.waitpid, pid, 0)
    rd, wr = os.pipe()
    later(lambda: os.write(wr, b"x"))
    w(os.read, rd, 1)
    os.close(rd)
    os.close(wr)
    a, b = socket.socketpair()
    later(lambda: b.send(b"x"))
    w(a.recv, 1)
    later(lambda: b.send(b"x"))
    w(a.recv_into, bytearray(1))
    a.close()
    b.close()
    u, v = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    later(lambda: v.send(b"x"))
    w(u.recvfrom, 1)
    later(lambda: v.send(b"x"))
    w(u.recvfrom_into, bytearray(1))
    u.close()
    v.close()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    c = []
    later(lambda: c.append(socket.create_connection(s.getsockname())))
    conn, _ = w(s.accept)
    conn.close()
    s.close()
    t = threading.Thread(target=time.sleep, args=(D,))
    w(t.start)
    w(t.join)
    tls_request()


server = threading.Thread(target=serve)
server.start()
total = 0
for i in range(8):
    t0 = time.perf_counter_ns()
    step()
    total += time.perf_counter_ns() - t0
print(inside[0] / total)
# the server's last connection: its request ends it
c = cctx.wrap_socket(socket.create_connection(srv.getsockname()),
                     server_hostname="localhost")
c.sendall(b"q")
c.close()
server.join()
