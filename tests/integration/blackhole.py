"""A next hop that reads every datagram and answers none: the dead half of
an overload (test_inrpd_overload.py, bench/bench_overload.py)."""
import socket
import threading


class BlackHole(threading.Thread):
    def __init__(self, addr="127.0.0.1"):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()
        self.received = 0

    def run(self):
        while not self.stopping.is_set():
            try:
                self.sock.recv(4096)
                self.received += 1
            except socket.timeout:
                pass

    def close(self):
        self.stopping.set()
        self.join()
        self.sock.close()
