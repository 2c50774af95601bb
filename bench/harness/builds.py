"""The binaries timed: this tree's `release` build (what `cargo run --release` in the README's
quick start compiles, and the build the speed targets are judged on), its `dist` build (the
product: one code unit, fat LTO) beside it, and the build of another commit (`--against REV`)
or another binary (`--baseline BIN`) that each command is compared with.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List

from measure import say

BINARY = "ofconvert"
HELPERS = ("ofconvert-bench-gen", "ofconvert-bench-convert", "ofconvert-bench-s3", "ofconvert-bench-crc")
"""The bench crate's binaries: always this tree's, in the release profile."""


class BuildFailed(Exception):
    pass


def target_dir(root: str) -> str:
    """Where cargo builds this tree: CARGO_TARGET_DIR, else what `cargo metadata` says."""
    if os.environ.get("CARGO_TARGET_DIR"):
        return os.path.abspath(os.environ["CARGO_TARGET_DIR"])
    try:
        metadata = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=root,
                                  check=True, capture_output=True, text=True).stdout
        return json.loads(metadata)["target_directory"]
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError):
        return os.path.join(root, "target")


@dataclass
class Tree:
    """This tree's binaries."""

    target: str
    profiles: List[str]
    """The profiles whose `ofconvert` is timed: release first, then dist when asked."""

    def ofconvert(self, profile: str) -> str:
        return os.path.join(self.target, profile, BINARY)

    def helper(self, name: str) -> str:
        return os.path.join(self.target, "release", name)

    def build(self, root: str) -> None:
        """`cargo build` of what the run times. The release build of the command line and the
        bench crate's binaries is what `cargo test --workspace --release` builds too, so after
        the tests it compiles nothing (.ci/run checks the features agree)."""
        say("building the release binaries (cargo build --release -p ofconvert -p ofconvert-bench --bins)")
        cargo(root, ["build", "--release", "--quiet", "-p", "ofconvert", "-p", "ofconvert-bench", "--bins"])
        if "dist" in self.profiles:
            say("building the dist binary (cargo build --profile dist -p ofconvert)")
            cargo(root, ["build", "--profile", "dist", "--quiet", "-p", "ofconvert"])

    def missing(self) -> List[str]:
        wanted = [self.ofconvert(p) for p in self.profiles] + [self.helper(h) for h in HELPERS]
        return [path for path in wanted if not os.access(path, os.X_OK)]


def time_first_build(root: str) -> float:
    """Seconds of a clean `cargo build --release -p ofconvert` into a target directory of its
    own: what a new user waits for, the dependencies downloaded but none compiled."""
    with tempfile.TemporaryDirectory(prefix="ofconvert-first-build-") as target:
        say("timing a clean cargo build --release -p ofconvert")
        started = time.perf_counter()
        cargo(root, ["build", "--release", "--locked", "--quiet", "-p", "ofconvert"], target=target)
        return time.perf_counter() - started


@dataclass
class Comparison:
    """The build each command of this one is compared with, run right after it."""

    name: str
    """The short commit (`--against`), or "baseline" (`--baseline`)."""
    binaries: Dict[str, str]
    """Its `ofconvert` by profile."""
    stand_in: Dict[str, str]
    """For each profile of this tree, the profile of the comparison that stands beside it."""
    notes: List[str] = field(default_factory=list)

    def label(self, profile: str) -> str:
        return self.name if self.name == "baseline" else f"{self.name} {profile}"

    def own(self, profile: str) -> bool:
        """Whether rows of this tree's `profile` get a twin of the comparison's own profile
        (else they are compared with the twin of the profile that stands in)."""
        return self.stand_in.get(profile) == profile


def baseline(binary: str, profiles: List[str]) -> Comparison:
    """`--baseline BIN`: one binary, beside the release rows and, stood in, the dist rows."""
    notes = [f"baseline = {binary}, timed right after this build's release binary on each command"]
    if "dist" in profiles:
        notes.append("the dist rows are compared with the same baseline runs as the release rows")
    return Comparison("baseline", {"release": binary}, {p: "release" for p in profiles}, notes)


def against(root: str, rev: str, target: str, profiles: List[str]) -> Comparison:
    """`--against REV`: REV built in the profiles of this run, in a target directory of its own
    kept between runs (`TARGET/bench-against/SHA/`), from a worktree removed after the build.
    A profile REV does not define is stood in by its release build, and said so."""
    sha = git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    short = git(root, "rev-parse", "--short", sha)
    manifest = git(root, "show", f"{sha}:Cargo.toml")
    home = os.path.join(target, "bench-against", sha)
    stand_in = {}
    notes = []
    for profile in profiles:
        if profile == "release" or f"[profile.{profile}]" in manifest:
            stand_in[profile] = profile
        else:
            stand_in[profile] = "release"
            notes.append(f"{short} has no {profile} profile: its release build stands beside this {profile} build")
    binaries = {p: os.path.join(home, p, BINARY) for p in set(stand_in.values())}
    to_build = sorted(p for p, path in binaries.items() if not os.access(path, os.X_OK))
    if to_build:
        work = tempfile.mkdtemp(prefix="ofconvert-against-")
        source = os.path.join(work, "src")
        try:
            git(root, "worktree", "add", "--detach", "--quiet", source, sha)
            for profile in to_build:
                say(f"building {short} (cargo build --profile {profile} -p ofconvert) into {home}")
                cargo(source, ["build", "--profile", profile, "--quiet", "-p", "ofconvert"], target=home)
        finally:
            if os.path.isdir(source):
                git(root, "worktree", "remove", "--force", source)
            shutil.rmtree(work, ignore_errors=True)
    for profile in sorted(binaries):
        how = "built now" if profile in to_build else "built before, reused"
        notes.insert(0, f"{short} = {sha}, {profile} build ({how}): {binaries[profile]}")
    return Comparison(short, binaries, stand_in, notes)


def cargo(cwd: str, args: List[str], target: str = "") -> None:
    env = dict(os.environ, CARGO_TARGET_DIR=target) if target else None
    try:
        subprocess.run(["cargo", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    except OSError as err:
        raise BuildFailed(f"cannot run cargo: {err}") from err
    except subprocess.CalledProcessError as err:
        raise BuildFailed(f"cargo {' '.join(args)} failed in {cwd} (exit {err.returncode})") from err


def git(root: str, *args: str) -> str:
    done = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildFailed(f"git {' '.join(args)}: {done.stderr.strip() or f'exit {done.returncode}'}")
    return done.stdout.strip()
