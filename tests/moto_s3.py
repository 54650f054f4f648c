"""An S3 server on 127.0.0.1 for the corpus-location tests (issue 22): moto in server mode, reached
through s3fs with the credentials in the environment and the endpoint in fsspec's configuration —
as a user's ``AWS_*`` variables and ``FSSPEC_S3_ENDPOINT_URL`` would set them. A uniquely named
helper module (tests/ is on sys.path)."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

SECRET = "wb-test-SECRET-must-never-be-stored-9f8e7d"
KEY_ID = "wbtestkeyid0001"
_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3")


@contextlib.contextmanager
def s3_server(bucket: str) -> Iterator[object]:
    """Start moto, create ``bucket``; yields an s3fs filesystem on it. Everything is put back after."""
    import fsspec
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in _ENV}
    saved_conf = fsspec.config.conf.get("s3")
    os.environ.update(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
        fsspec.config.conf["s3"] = {"endpoint_url": endpoint}
        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.mkdir(bucket)
        yield fs
    finally:
        server.stop()
        if saved_conf is None:
            fsspec.config.conf.pop("s3", None)
        else:
            fsspec.config.conf["s3"] = saved_conf
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def dropping_proxy(target: str, limit: int = 8192) -> Iterator[str]:
    """A TCP proxy on 127.0.0.1 in front of ``target`` (``http://host:port``) that passes requests
    whole but closes each connection after ``limit`` bytes of responses: a connection dropped in
    the middle of a download. Yields the proxy's endpoint URL."""
    import socket
    import threading

    host, port = target.removeprefix("http://").rsplit(":", 1)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def pipe(src: socket.socket, dst: socket.socket, budget: int | None) -> None:
        sent = 0
        try:
            while not stop.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if budget is not None and sent + len(data) > budget:
                    dst.sendall(data[: max(0, budget - sent)])
                    break
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            upstream = socket.create_connection((host, int(port)))
            threading.Thread(target=pipe, args=(client, upstream, None), daemon=True).start()
            threading.Thread(target=pipe, args=(upstream, client, limit), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
