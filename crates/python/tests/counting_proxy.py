"""A proxy in front of moto's S3 server that counts what a store's bill counts and can fail,
hold back or gather the requests it forwards: the `counted` fixture of conftest.py puts one
before a bucket of its own."""


class CountingProxy:
    """An HTTP proxy on 127.0.0.1 in front of `upstream` that counts the body bytes of the
    answers to GETs (what a store's egress bill counts)."""

    def __init__(self, upstream, fail_every=0):
        import http.client
        import http.server
        import threading

        host, port = upstream.rsplit("//", 1)[1].split(":")
        counter = self
        self.bytes = 0
        self.requests = 0
        self.gets = 0
        self.faults = 0
        self.fail_every = fail_every
        self.seen = []  # every request: its method, target and Range header
        self.bodies = []  # every GET answered: its target, Range header and body bytes
        # While cleared, GETs of byte ranges wait (30 s at most) before they are forwarded: a
        # reader is held in the middle of what it fetches (listings go on).
        self.flowing = threading.Event()
        self.flowing.set()
        self.arrived = 0  # GETs come in, held or not
        # GETs wait until this many are in flight together (or 10 s pass, once) before they
        # are forwarded: requests sent side by side are then seen together, whatever the timing.
        self.gather = 0
        self.gave_up = False
        self.in_flight = self.most_in_flight = 0  # GETs being answered: now, at most
        self.lock = threading.Lock()
        self.gathered = threading.Condition(self.lock)

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                with counter.lock:
                    counter.seen.append((self.command, self.path, self.headers.get("Range")))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                connection = http.client.HTTPConnection(host, int(port), timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"{host}:{port}"
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                fault = None
                if self.command == "GET" and counter.fail_every:
                    with counter.lock:
                        counter.gets += 1
                        if counter.gets % counter.fail_every == 0:
                            counter.faults += 1
                            fault = ("503", "cut", "reset")[counter.faults % 3]
                if fault == "503":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fault == "reset":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault == "cut":
                    # The headers promise the whole body; half of it comes, then the end.
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in ("transfer-encoding", "connection"):
                            self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.close_connection = True
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                if self.command == "GET":
                    with counter.lock:
                        counter.bytes += len(data)
                        counter.requests += 1
                        counter.bodies.append((self.path, self.headers.get("Range"), len(data)))
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                length = answer.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                connection.close()

            def held_get(self):
                with counter.lock:
                    counter.arrived += 1
                if self.headers.get("Range"):
                    counter.flowing.wait(timeout=30)
                with counter.gathered:
                    counter.in_flight += 1
                    counter.most_in_flight = max(counter.most_in_flight, counter.in_flight)
                    counter.gathered.notify_all()
                    if not counter.gathered.wait_for(counter.all_in, timeout=10):
                        counter.gave_up = True  # the others go on at once
                        counter.gathered.notify_all()
                try:
                    self.forward()
                finally:
                    with counter.lock:
                        counter.in_flight -= 1

            do_GET = held_get
            do_HEAD = do_PUT = do_POST = do_DELETE = forward

        class Server(http.server.ThreadingHTTPServer):
            # Connections a reader opens side by side are not dropped (the default is 5).
            request_queue_size = 128

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def all_in(self):
        """Whether the GETs held back may go on (called with the lock held)."""
        return self.most_in_flight >= self.gather or self.gave_up

    def reset(self):
        with self.lock:
            self.bytes = self.requests = self.most_in_flight = 0
            self.gave_up = False
            self.seen = []
            self.bodies = []
            self.arrived = 0
