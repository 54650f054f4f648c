"""Corpus files that are not on this disk: ``s3://``, ``gs://``, ``hf://datasets/…``, ``http(s)://``
and ``memory://`` locations, read through ``fsspec``.

A location is a :class:`RemotePath`: the URL as the user wrote it, which is what a project stores
and what every message names. It is deliberately *not* a ``PathLike``: no local file function can
take it by mistake (``open("s3://…")`` would look for a folder called ``s3:``).

* **Offline by default.** ``fsspec`` and its backends (``s3fs``, ``gcsfs``, ``huggingface_hub``,
  ``aiohttp``) are imported only when a location is given; nothing is contacted otherwise.
* **Credentials stay where the backend keeps them** (``AWS_PROFILE``/``~/.aws``,
  ``GOOGLE_APPLICATION_CREDENTIALS``, ``HF_TOKEN``, ``FSSPEC_<PROTOCOL>_<OPTION>`` variables). A URL
  that carries a secret itself (``https://user:pass@…``, a pre-signed ``?X-Amz-Signature=…``) is
  refused, so no secret can reach a project file, a log or a message.
* **Streaming.** A location is read in ~1 MB blocks; ``tell()`` is the bytes fetched so far, which
  is the progress. Any failure while reading — a dropped connection, a key deleted meanwhile —
  becomes one line naming the URL.
* **Fingerprints** come from the store's own metadata (ETag, else modification time, with the
  size) rather than from hashing the bytes, which would download every shard twice.

Left out: writing, remote ``save_to_disk`` folders (give their ``.arrow`` shards), and
``fsspec``'s chained URLs (``zip::s3://…``), refused as unknown.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any, BinaryIO, Iterable
from urllib.parse import parse_qsl, urlsplit

from workbench.errors import WorkbenchError

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# What to install for each protocol's backend (fsspec names the module, not the package).
BACKENDS = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "hf": "huggingface_hub",
            "http": "aiohttp", "https": "aiohttp", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs"}
REMOTE_HINT = 'pip install "tokenizer-workbench[remote]"'
CREDENTIALS_HINT = {
    "s3": "AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or ~/.aws/credentials",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS, or gcloud auth application-default login",
    "hf": "HF_TOKEN, or huggingface-cli login",
}
_SECRET_PARAMS = frozenset({
    "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential",
    "signature", "sig", "token", "access_token", "api_key", "apikey", "key", "password", "secret",
})
_GLOB = re.compile(r"[*?\[]")


def is_url(path: object) -> bool:
    """True for a :class:`RemotePath` or a string such as ``s3://bucket/key`` (``file://`` is local)."""
    if isinstance(path, RemotePath):
        return True
    if not isinstance(path, str):
        return False
    match = _URL.match(path)
    return match is not None and match.group(1).lower() != "file"


def redacted(url: str) -> str:
    """The URL with any user info and query string replaced by ``…``, safe to show and log."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return parts._replace(netloc=("…@" if "@" in parts.netloc else "") + netloc,
                          query="…" if parts.query else "").geturl()


_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*:/{1,2})[^/\s@]+@")
_SECRET_NAMES = "|".join(re.escape(k) for k in sorted(_SECRET_PARAMS))
_SECRET_QUERY = re.compile(rf"([?&](?:{_SECRET_NAMES})=)[^&#\s]*", re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` (a message, a command line) with every URL's user info and secret query values
    replaced by ``…``, also where a path normalisation left one slash (``https:/user:pw@host``)."""
    return _SECRET_QUERY.sub(r"\1…", _USERINFO.sub(r"\1…@", text))


def check_url(url: str) -> str:
    """The URL if it carries no secret and names a protocol, else one line saying what to do."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if "::" in url:
        raise WorkbenchError(f"{redacted(url)}: chained URLs are not read: give the location itself")
    if parts.username or parts.password:
        raise WorkbenchError(f"{redacted(url)}: the URL carries credentials, which a project would store: "
                             f"remove them and let the {scheme} backend read them from its environment")
    secret = [k for k, _v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() in _SECRET_PARAMS]
    if secret:
        raise WorkbenchError(f"{redacted(url)}: the URL carries a signature or token ({secret[0]}), which a project "
                             "would store: give the location without it and set credentials in the environment")
    if scheme in ("s3", "s3a", "gs", "gcs", "hf", "memory", "az", "abfs", "abfss") and not (parts.netloc or
                                                                                            parts.path.strip("/")):
        raise WorkbenchError(f"{url}: names no bucket or file: write it as {scheme}://bucket/path")
    return url


class RemotePath:
    """A corpus location given as a URL; the few ``Path`` features the corpus layer uses."""

    __slots__ = ("url",)

    def __init__(self, url: str):
        self.url = check_url(str(url))

    @property
    def protocol(self) -> str:
        return self.url.split("://", 1)[0].lower()

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        return os.path.splitext(self.name)[1]

    @property
    def parent(self) -> RemotePath:
        head = self.url.rstrip("/").rsplit("/", 1)[0]
        return RemotePath(head) if "://" in head and head.split("://", 1)[1] else self

    def __truediv__(self, other: str) -> RemotePath:
        return RemotePath(self.url.rstrip("/") + "/" + other)

    def expanduser(self) -> RemotePath:
        return self

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemotePath({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and other.url == self.url

    def __lt__(self, other: RemotePath) -> bool:
        return self.url < other.url

    def __hash__(self) -> int:
        return hash(("remote", self.url))


CorpusPath = Path | RemotePath


def corpus_path(path: str | os.PathLike[str] | RemotePath) -> CorpusPath:
    """A local path (``~`` expanded) or a :class:`RemotePath` for a URL (``file://`` is local)."""
    if isinstance(path, RemotePath):
        return path
    text = os.fspath(path) if not isinstance(path, str) else path
    if isinstance(text, str) and is_url(text):
        return RemotePath(text)
    if isinstance(text, str) and text.lower().startswith("file://"):
        return Path(text[len("file://"):]).expanduser()
    return Path(text).expanduser()


def stored_path(path: CorpusPath) -> str:
    """What a project records for a corpus file: the absolute local path, or the URL as given."""
    return str(path) if isinstance(path, RemotePath) else str(Path(path).resolve())


def filesystem(url: str) -> tuple[Any, str]:
    """``(fsspec filesystem, path inside it)`` for a URL; the backend is imported here, lazily."""
    scheme = url.split("://", 1)[0].lower()
    try:
        import fsspec  # noqa: PLC0415 - only when a location is given
    except ImportError:
        raise WorkbenchError(f"{url}: reading {scheme}:// locations needs fsspec: {REMOTE_HINT}") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        package = BACKENDS.get(scheme, f"the fsspec backend for {scheme}://")
        raise WorkbenchError(f"{url}: reading {scheme}:// locations needs {package}: {REMOTE_HINT}") from None
    except ValueError as exc:
        raise WorkbenchError(f"{url}: {scheme}:// is not a storage the workbench can read ({exc}): give an "
                             "s3://, gs://, hf://, http(s):// location or a local path") from None


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "…"


def _network_cause(exc: BaseException) -> BaseException | None:
    """The connection failure behind ``exc`` (itself, or what it was raised from), if there is one."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 8:
        name = type(current).__name__
        if isinstance(current, (ConnectionError, TimeoutError)) or "Connect" in name or "Timeout" in name:
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def remote_error(url: str, exc: BaseException) -> WorkbenchError:
    """One line for a failure on a location: missing, refused, or the network."""
    scheme = url.split("://", 1)[0].lower()
    scheme = {"s3a": "s3", "gcs": "gs"}.get(scheme, scheme)
    if isinstance(exc, WorkbenchError):
        return exc
    network = _network_cause(exc)
    if network is not None:  # fsspec's HTTP backend reports an unreachable server as a missing file
        return WorkbenchError(f"{url}: cannot reach it ({_reason(network)}): check the connection and the "
                              "endpoint, then run again")
    if isinstance(exc, FileNotFoundError):
        return WorkbenchError(f"{url}: no such file or object: check the bucket and the key (was it moved or "
                              "deleted?)")
    if isinstance(exc, PermissionError):
        hint = CREDENTIALS_HINT.get(scheme, "the credentials its backend reads from the environment")
        return WorkbenchError(f"{url}: access denied ({_reason(exc)}): check the credentials ({hint}) and the "
                              "permissions on the bucket")
    if isinstance(exc, IsADirectoryError):
        return WorkbenchError(f"{url}: is a folder, not a file: add the folder to read the files inside")
    return WorkbenchError(f"{url}: cannot read it over the network ({_reason(exc)}): check the connection and "
                          "the endpoint, then run again")


def info(location: RemotePath, *, fresh: bool = False) -> dict[str, Any]:
    """The store's metadata of a location (``size``, ``type``, and an ETag or time when it has one)."""
    fs, path = filesystem(location.url)
    try:
        if fresh:
            fs.invalidate_cache(path)
        return dict(fs.info(path))
    except Exception as exc:  # noqa: BLE001 - every backend raises its own family; all become one line
        raise remote_error(location.url, exc) from None


def size_of(location: RemotePath) -> int:
    """The size in bytes of a location that is a file; one line when it is a folder or missing."""
    meta = info(location)
    if meta.get("type") == "directory":
        raise WorkbenchError(f"{location}: is a folder, not a file: add the folder to read the files inside")
    size = meta.get("size")
    return int(size) if size is not None else -1


_VERSION_KEYS = ("ETag", "etag", "md5Hash", "md5", "sha256", "blob_id", "LastModified", "last_modified", "mtime",
                 "updated", "created")


def remote_fingerprint(location: RemotePath, *, fresh: bool = True) -> str:
    """``"<size>:<what>:<value>"`` from the store's metadata: the ETag (S3, GCS, HTTP), a hash the
    store gives, else the modification time — what changes when the object is replaced. Asked of
    the store afresh by default (a listing cached earlier may describe the object it replaced)."""
    meta = info(location, fresh=fresh)
    version = next(((key, meta[key]) for key in _VERSION_KEYS if meta.get(key) not in (None, "")), None)
    lfs = meta.get("lfs")
    if isinstance(lfs, dict) and lfs.get("sha256"):
        version = ("sha256", lfs["sha256"])
    what, value = version if version else ("size", "only")
    return f"{meta.get('size')}:{what.lower()}:{str(value).strip(chr(34))}"


def is_pattern(url: str) -> bool:
    """True when a location is a glob (``*``, ``?``, ``[…]`` in its path); in an http(s) URL only a
    ``*`` counts, since ``?`` starts the query there."""
    scheme, rest = url.split("://", 1)
    if scheme.lower() in ("http", "https"):
        return "*" in rest.split("?", 1)[0]
    return bool(_GLOB.search(rest))


def expand(url: str) -> list[RemotePath]:
    """The files a location names: itself, every match of a glob (``s3://b/shards/*.jsonl.zst``), or
    every file under a folder (hidden names and Spark/Hadoop bookkeeping left out), in sorted order."""
    location = RemotePath(url)
    fs, path = filesystem(location.url)
    try:
        if is_pattern(location.url):
            found = fs.glob(path, detail=True)
            names = sorted(name for name, meta in found.items() if meta.get("type") != "directory")
            if not names:
                raise WorkbenchError(f"{url}: no file matches the pattern: check the bucket, the folder and "
                                     "the pattern")
        else:
            meta = fs.info(path)
            if meta.get("type") != "directory":
                return [location]
            names = sorted(fs.find(path))
            if not names:
                raise WorkbenchError(f"{url}: the folder has no files")
    except WorkbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - every backend raises its own family; all become one line
        raise remote_error(location.url, exc) from None
    kept = [n for n in names if not n.rsplit("/", 1)[-1].startswith((".", "_"))]
    # Spell each file's URL as the user spelled the location (memory://x, not memory:///x).
    scheme, rest = location.url.split("://", 1)
    lead = path[: len(path) - len(rest)] if rest and path.endswith(rest) else None
    return [RemotePath(f"{scheme}://{name[len(lead):]}" if lead is not None and name.startswith(lead)
                       else fs.unstrip_protocol(name)) for name in kept]


def expand_locations(paths: Iterable[str | os.PathLike[str]]) -> list[str | os.PathLike[str]]:
    """``paths`` with every location glob or folder replaced by the files it names (local paths as
    they are), for callers that open each path themselves."""
    out: list[str | os.PathLike[str]] = []
    for path in paths:
        if isinstance(path, str) and is_url(path) and (is_pattern(path) or path.endswith("/")):
            out.extend(str(remote) for remote in expand(path))
        else:
            out.append(path)
    return out


class _Guarded(io.RawIOBase):
    """A remote file as a raw stream whose failures are one line naming the URL; ``tell()`` is
    the bytes fetched so far."""

    def __init__(self, handle: Any, url: str):
        self._handle, self._url, self._pos = handle, url, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._handle.read(len(buffer))
        except Exception as exc:  # noqa: BLE001 - a dropped connection is aiohttp's, botocore's or OSError
            raise remote_error(self._url, exc) from None
        n = len(data)
        buffer[:n] = data
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        try:
            self._handle.close()
        except Exception:  # noqa: BLE001 - closing a half-read remote file must not hide the real error
            pass
        super().close()


def open_remote(location: RemotePath, block_size: int = 1 << 20) -> BinaryIO:
    """The bytes of a location as a buffered, line-iterable stream (read in ``block_size`` blocks)."""
    fs, path = filesystem(location.url)
    # HTTP is streamed in one request (servers need not support ranges); stores read in blocks.
    streamed = location.protocol in ("http", "https")
    try:
        handle = fs.open(path, "rb", block_size=0 if streamed else block_size)
    except Exception as exc:  # noqa: BLE001 - every backend raises its own family; all become one line
        raise remote_error(location.url, exc) from None
    return io.BufferedReader(_Guarded(handle, location.url), block_size)


def open_seekable(location: RemotePath) -> Any:
    """A location as fsspec's own seekable file, for readers that jump around (Parquet, Arrow's footer)."""
    fs, path = filesystem(location.url)
    try:
        return fs.open(path, "rb", block_size=1 << 20)
    except Exception as exc:  # noqa: BLE001 - every backend raises its own family; all become one line
        raise remote_error(location.url, exc) from None


class _Position:
    """``tell`` of the raw side of a buffered stream: bytes fetched, not bytes handed out."""

    def __init__(self, stream: Any):
        self.raw = stream.raw

    def __call__(self) -> int:
        return int(self.raw.tell())


def fetched(stream: BinaryIO) -> _Position:
    return _Position(stream)
