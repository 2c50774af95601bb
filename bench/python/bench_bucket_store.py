"""The parent's side of the bucket for bench_bucket.py and bench_ranks.py: the S3 server and
the counting proxy in front of it started and stopped, rclone's remotes and uploads, each
corpus uploaded as TFRecord files and MDS shards, the readers' environment, and a task run
in a child process of its own. Above the proxy and the tasks.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from bench_bucket_proxy import CountingProxy
from bench_bucket_tasks import count_records

# The script whose `--worker SPEC` runs a task in a child process.
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_bucket.py")

ACCESS_KEY = "ofconvert-bench"
SECRET_KEY = "ofconvert-bench-secret"


def say(text: str) -> None:
    """Progress, on the standard error (the table goes to the standard output)."""
    print(text, file=sys.stderr, flush=True)


def in_child(python: str, spec: Dict[str, Any], env: Dict[str, str]) -> Dict[str, Any]:
    if not shutil.which(python):
        return {"missing": python}
    command = [python, SCRIPT, "--worker", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env={**os.environ, **env})
    if done.returncode != 0:
        raise SystemExit(f"{spec['task']} ({python}) failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def files_of(directory: Path) -> List[str]:
    # Indexes that ofconvert.data keeps beside the files are not record files.
    return sorted(
        str(p) for p in directory.iterdir()
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(".idx")
    )


def start_s3(server: str, root: Path) -> Tuple[subprocess.Popen, str]:
    """The S3 server binary serving `root` on 127.0.0.1, and its endpoint."""
    process = subprocess.Popen([server, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    endpoint = process.stdout.readline().strip()
    if not endpoint.startswith("http://127.0.0.1:"):
        process.kill()
        raise SystemExit(f"{server} said {endpoint!r}, not its endpoint")
    return process, endpoint


@contextlib.contextmanager
def bucket(s3_server: str, work: Path, latency_ms: float, rate_mbs: float) -> Iterator[Tuple[str, CountingProxy]]:
    """The S3 server serving the empty folder WORK/s3, and the counting proxy in front of it
    (`latency_ms`, `rate_mbs`: the network it stands for); stopped on the way out."""
    root = work / "s3"
    root.mkdir()
    server, endpoint = start_s3(s3_server, root)
    proxy: Optional[CountingProxy] = None
    try:
        proxy = CountingProxy(endpoint, latency_ms / 1e3, rate_mbs * 1e6)
        yield endpoint, proxy
    finally:
        if proxy is not None:
            proxy.close()
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def rclone_env(remote: str, endpoint: str, config: Path) -> Dict[str, str]:
    """An rclone remote named `remote` for the server at `endpoint`, from the environment."""
    prefix = f"RCLONE_CONFIG_{remote.upper()}_"
    return {
        "RCLONE_CONFIG": str(config), prefix + "TYPE": "s3", prefix + "PROVIDER": "Other",
        prefix + "ENDPOINT": endpoint, prefix + "ACCESS_KEY_ID": ACCESS_KEY,
        prefix + "SECRET_ACCESS_KEY": SECRET_KEY, prefix + "REGION": "us-east-1", prefix + "FORCE_PATH_STYLE": "true",
    }


def rclone(binary: str, env: Dict[str, str], *args: str) -> None:
    # rclone's S3 client fails on an AWS_CA_BUNDLE it cannot fit to its own transport; the
    # server is plain HTTP on 127.0.0.1 and needs none.
    inherited = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    done = subprocess.run([binary, "-q", *args], capture_output=True, text=True, check=False, env={**inherited, **env})
    if done.returncode != 0:
        raise SystemExit(f"rclone {' '.join(args)} failed:\n{done.stderr}")


def upload(binary: str, env: Dict[str, str], source: Path, names: List[str], target: str, work: Path) -> None:
    listing = work / "upload-list"
    listing.write_text("".join(name + "\n" for name in names))
    rclone(binary, env, "copy", "--files-from-raw", str(listing), str(source), target)


def reader_env(url: str) -> Dict[str, str]:
    """The environment of a reader's process: the bucket at `url` (the proxy), its keys."""
    return {
        "AWS_ENDPOINT_URL": url, "S3_ENDPOINT_URL": url, "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
        "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error",
    }


def upload_corpus(binary: str, direct: Dict[str, str], name: str, folder: Path, work: Path,
                  mosaic_python: Optional[str], env: Dict[str, str]) -> Dict[str, Any]:
    """Uploads the TFRecord files of `folder` to s3://NAME/tfrecord/ and, with a
    `mosaic_python` that has MosaicML Streaming, the MDS shards of the same records to
    s3://NAME/mds/. What was uploaded: files, size, records, urls, and mds_size or, where
    Mosaic is missing, mosaic (why its rows are empty)."""
    files = files_of(folder)
    info: Dict[str, Any] = {
        "files": files, "size": sum(os.path.getsize(f) for f in files), "records": count_records(files),
        "urls": [f"s3://{name}/tfrecord/{Path(f).name}" for f in files],
    }
    say(f"{name}: uploading {len(files)} TFRecord files ({info['size'] / 1e6:,.1f} MB, {info['records']:,} records)")
    upload(binary, direct, folder, [Path(f).name for f in files], f"direct:{name}/tfrecord/", work)
    if mosaic_python is None:
        info["mosaic"] = "not run"
        return info
    mds = work / "mds" / name
    written = in_child(mosaic_python, {"task": "mds_write", "files": files, "out": str(mds)}, env)
    if "missing" in written:
        info["mosaic"] = f"not installed ({written['missing']})"
        return info
    if written["records"] != info["records"]:
        raise SystemExit(f"MDSWriter wrote {written['records']} records of {info['records']}")
    info["mds_size"] = tree_size(mds)
    say(f"{name}: uploading the MDS shards ({info['mds_size'] / 1e6:,.1f} MB)")
    names = [str(p.relative_to(mds)) for p in sorted(mds.rglob("*")) if p.is_file()]
    upload(binary, direct, mds, names, f"direct:{name}/mds/", work)
    shutil.rmtree(mds)
    return info


def tree_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
