"""Buckets for the bucket-to-bucket rows: one local S3 server (`ofconvert-bench-s3`, the s3s-fs
server the integration tests run, over a directory) and rclone configured for it.

rclone sees two remotes, so that it moves every byte down and up as ofconvert does instead of
asking the server to copy; both are configured through environment variables, no file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Dict, List, Optional

from measure import say

ACCESS_KEY = "ofconvert-bench"
SECRET_KEY = "ofconvert-bench-secret"


def find_rclone() -> Optional[str]:
    """rclone on PATH, installed with apt-get when it is missing and this runs as root."""
    if shutil.which("rclone") is None and shutil.which("apt-get") and os.geteuid() == 0:
        say("installing rclone")
        subprocess.run(["apt-get", "update", "-qq"], check=False, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-qq", "rclone"], check=False, stdout=subprocess.DEVNULL)
    return shutil.which("rclone")


class Server:
    """The S3 server over `root`, each subdirectory a bucket; it stops when its standard input
    closes."""

    def __init__(self, binary: str, root: str, log: str) -> None:
        self.root = root
        for bucket in ("src", "dst"):
            os.makedirs(os.path.join(root, bucket), exist_ok=True)
        with open(log, "w") as errors:
            self.process = subprocess.Popen([binary, root], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=errors, text=True)
        assert self.process.stdout is not None
        self.endpoint = self.process.stdout.readline().strip()
        if not self.endpoint.startswith("http://127.0.0.1:"):
            self.stop()
            with open(log) as text:
                raise RuntimeError(f"the S3 server did not start: {text.read().strip()}")
        say(f"S3 server at {self.endpoint}")

    def env(self) -> Dict[str, str]:
        """The environment of ofconvert and rclone reaching it. rclone's own transport refuses
        AWS_CA_BUNDLE (the endpoint is plain http anyway)."""
        env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
                   AWS_REGION="us-east-1", AWS_ENDPOINT_URL=self.endpoint, AWS_ALLOW_HTTP="true")
        env.pop("AWS_CA_BUNDLE", None)
        for remote in ("BENCHSRC", "BENCHDST"):
            prefix = f"RCLONE_CONFIG_{remote}_"
            env.update({prefix + "TYPE": "s3", prefix + "PROVIDER": "Other", prefix + "ACCESS_KEY_ID": ACCESS_KEY,
                        prefix + "SECRET_ACCESS_KEY": SECRET_KEY, prefix + "ENDPOINT": self.endpoint,
                        prefix + "REGION": "us-east-1"})
        return env

    def upload(self, rclone: str, local: str, remote: str) -> None:
        """Through the server, which then stores each object's ETag, as a real store does; a
        file copied into its directory would have its MD5 computed again on every HEAD and
        GET."""
        subprocess.run(rclone_copy(rclone, local, f"BENCHSRC:{remote}"), env=self.env(), check=True)

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def rclone_copy(rclone: str, source: str, dest: str) -> List[str]:
    """`rclone copy` of one folder or prefix into another. The trailing slashes spare rclone a
    HEAD of the prefix, which s3s-fs answers with 500 (a directory is no object) and rclone
    retries with backoff."""
    return [rclone, "copy", "--config", os.devnull, source + "/", dest + "/"]
