"""A stand-in for BIRD's control socket, for what a real BIRD cannot be
made to do on demand: answer with malformed bytes, or go silent while
its socket stays open (hung).  Everything a real BIRD can show (next
hops lost and found, IGP metrics, AS paths, a BIRD killed and restarted)
is tested with real bird2 routers in network namespaces
(test_netlab_*.py, netlab.py).

It speaks what bird2 2.0.12 prints (recorded from a real one): a
greeting, then for `show route for ADDR all` either the covering route
with its attributes or `8001 Network not found`.  `hang` (no greeting,
no replies) and `garbage` (a reply that is not BIRD's protocol) are
switched by the test."""

import os
import socket
import threading


class FakeBird:
    def __init__(self, path):
        self.path = str(path)
        self.routes = {}            # addr -> dict(protocol, igp_metric, as_path) ; absent: not found
        self.lock = threading.Lock()
        self.queries = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.stopping = False
        self.hang = False           # accept, then say nothing
        self.garbage = False        # answer every command with bytes BIRD never sends
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def set(self, addr, protocol="static1", igp_metric=None, as_path=()):
        with self.lock:
            self.routes[addr] = dict(protocol=protocol, igp_metric=igp_metric, as_path=list(as_path))

    def unset(self, addr):
        with self.lock:
            self.routes.pop(addr, None)

    def _reply(self, line):
        if self.garbage:
            return "1007-Table master4:\n\0garbage\n"
        parts = line.split()
        if parts[:3] != ["show", "route", "for"] or len(parts) < 4:
            return "9001 syntax error, unexpected CF_SYM_UNDEFINED\n"
        addr = parts[3]
        with self.lock:
            self.queries += 1
            r = self.routes.get(addr)
        if r is None:
            return "8001 Network not found\n"
        metric = f"/{r['igp_metric']}" if r["igp_metric"] is not None else ""
        out = ("1007-Table master4:\n"
               f" {addr}/32          unicast [{r['protocol']} 03:28:15.626] * (200{metric})\n"
               " \tdev eth0\n"
               "1008-\tType: static univ\n")
        if r["igp_metric"] is not None:
            out += f"1012-\tigp_metric: {r['igp_metric']}\n"
            if r["as_path"]:
                out += " \tBGP.as_path: " + " ".join(str(a) for a in r["as_path"]) + "\n"
        elif r["as_path"]:
            out += "1012-\tBGP.as_path: " + " ".join(str(a) for a in r["as_path"]) + "\n"
        return out + "0000 \n"

    def _serve(self, conn):
        try:
            if not self.hang:
                conn.sendall(b"0001 BIRD 2.0.12 ready.\n")
            buf = b""
            while not self.stopping:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf and not self.hang:
                    line, buf = buf.split(b"\n", 1)
                    conn.sendall(self._reply(line.decode(errors="replace")).encode())
        except OSError:
            pass
        finally:
            conn.close()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self):
        self.stopping = True
        self.sock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
