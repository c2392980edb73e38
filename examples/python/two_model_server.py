#!/usr/bin/env python3
"""Two models behind one HTTP server in one process, with a priority per request.

`POST /infer?model=resnet&priority=10` runs ResNet-50 (fp16, batch 8) at priority 10;
`POST /infer?model=bulk` runs a batch-64 ResNet-50 forward pass at the default priority 0.
Each request's handler thread runs its model inside `baton.torch.priority(p)`, so an
interactive request's kernels get a stream of their own at its priority and the bulk
requests' work yields to them. The example drives itself: one client thread sends interactive
requests (5 ms apart), another sends bulk requests back to back.

    baton run -- python examples/python/two_model_server.py
    baton run -- python examples/python/two_model_server.py --hints off   # compare
"""

import http.client
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

import harness

a = harness.args(__doc__.splitlines()[1])
HINTS = harness.hints_on(a)
if HINTS:
    import baton.torch

torch.manual_seed(0)
models = {
    "resnet": (harness.resnet50().to("cuda").half().eval(),
               torch.randn(8, 3, 224, 224, device="cuda", dtype=torch.half)),
    "bulk": (harness.resnet50().to("cuda").half().eval(),
             torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)),
}
plain = threading.local()


def infer(name: str, priority: int) -> int:
    model, x = models[name]
    with torch.no_grad():
        if HINTS:
            with baton.torch.priority(priority) as s:
                y = model(x)
                s.synchronize()
        else:
            s = getattr(plain, "stream", None) or torch.cuda.Stream()
            plain.stream = s
            with torch.cuda.stream(s):
                y = model(x)
                s.synchronize()
    return int(y.argmax(dim=1)[0])


class Handler(BaseHTTPRequestHandler):
    # Small replies on a kept-alive connection: without this, Nagle's algorithm and the
    # client's delayed acknowledgement add ~40 ms to a reply sent in two writes.
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        name = q.get("model", ["resnet"])[0]
        priority = int(q.get("priority", ["0"])[0])
        if name not in models or not -100 <= priority <= 100:
            self.send_error(400, "model is resnet or bulk; priority -100..100")
            return
        body = str(infer(name, priority)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
local = threading.local()


def post(path: str) -> None:
    c = getattr(local, "conn", None)
    if c is None:
        c = local.conn = http.client.HTTPConnection("127.0.0.1", port)
        c.connect()
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.request("POST", path, body=b"", headers={"Content-Length": "0"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status


class BulkClient:
    """The best-effort side: bulk requests back to back, logged as they complete (the
    harness's trainer interface)."""

    def __init__(self):
        self.log, self.stop_flag, self.thread = [], threading.Event(), None

    def _run(self):
        while not self.stop_flag.is_set():
            post("/infer?model=bulk&priority=0")
            self.log.append(time.monotonic())

    def start(self):
        self.log, self.stop_flag = [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        time.sleep(1.0)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        return self.log


def request():
    post("/infer?model=resnet&priority=10")


for _ in range(10):
    request()
    post("/infer?model=bulk&priority=0")
harness.run_phases(a, "two_model_server", request, BulkClient())
server.shutdown()
