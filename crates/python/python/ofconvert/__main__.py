"""The ``ofconvert`` command of the Python package: ``tf2of`` and ``of2tf`` with the Rust
command line's options, exit statuses (0 done, 1 something failed, 2 usage, 130
interrupted) and ``--json`` summary. The inspection commands (cat, count, verify, schema,
index) are in the Rust ``ofconvert`` binary."""

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import __version__
from ._convert import of2tf, tf2of
from ._errors import ConversionError, Error, UsageError


def _pair(text: str) -> Tuple[str, str]:
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise argparse.ArgumentTypeError(f"expected OLD=NEW, got {text!r}")
    return old, new


def _value(text: str) -> Tuple[str, str]:
    name, sep, value = text.rpartition("=")
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _offset(text: str) -> Tuple[str, int]:
    name, value = _value(text)
    try:
        return name, int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ofconvert",
        description="Convert TensorFlow TFRecord datasets to OneFlow OFRecord datasets and back.",
    )
    parser.add_argument("--version", action="version", version=f"ofconvert {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    tf = commands.add_parser("tf2of", help="TFRecord files in, OneFlow OFRecord datasets out")
    of = commands.add_parser("of2tf", help="OneFlow OFRecord datasets in, TFRecord files out")
    for sub in (tf, of):
        sub.add_argument("input", metavar="IN")
        sub.add_argument("output", metavar="OUT")
        sub.add_argument("-j", "--jobs", type=_positive, metavar="N")
        sub.add_argument("-q", "--quiet", action="store_true")
        sub.add_argument("--json", action="store_true", help="print the summary as JSON")
        existing = sub.add_mutually_exclusive_group()
        existing.add_argument("--overwrite", action="store_true")
        existing.add_argument("--resume", action="store_true")
        sub.add_argument("--on-corrupt", choices=["fail", "skip"], default="fail")
        sub.add_argument("--no-verify", action="store_true")
        sub.add_argument("--no-sync", action="store_true")
        sub.add_argument("--part-prefix", default="part-", metavar="PREFIX")
        sub.add_argument("--parts", type=_positive, metavar="N")
        sub.add_argument("--records-per-part", type=_positive, metavar="N")
        sub.add_argument("--max-part-bytes", metavar="SIZE")
        sub.add_argument("--rename", type=_pair, action="append", default=[], metavar="OLD=NEW")
        sub.add_argument("--cast", type=_value, action="append", default=[], metavar="NAME=TYPE")
        sub.add_argument("--offset", type=_offset, action="append", default=[], metavar="NAME=DELTA")
        sub.add_argument("--keep", action="append", default=[], metavar="NAME")
        sub.add_argument("--drop", action="append", default=[], metavar="NAME")
    tf.add_argument("--part-digits", type=int, default=5, metavar="N")
    tf.add_argument("--preset", choices=["imagenet"])
    tf.add_argument("--sequence", choices=["refuse", "flatten"], default="refuse")
    tf.add_argument("--raw-feature", metavar="NAME")
    tf.add_argument("--empty", choices=["error", "skip"], default="error")
    of.add_argument("--compression", choices=["none", "gzip", "zlib"], default="none")
    of.add_argument("--lossy", action="store_true")
    return parser


def _options(args: argparse.Namespace) -> Dict[str, Any]:
    options: Dict[str, Any] = dict(
        parts=args.parts,
        records_per_part=args.records_per_part,
        max_part_bytes=args.max_part_bytes,
        part_prefix=args.part_prefix,
        rename=dict(args.rename),
        cast=dict(args.cast),
        offset=dict(args.offset),
        keep=args.keep,
        drop=args.drop,
        on_corrupt=args.on_corrupt,
        overwrite=args.overwrite,
        resume=args.resume,
        jobs=args.jobs,
        sync=not args.no_sync,
        verify=not args.no_verify,
    )
    if args.command == "tf2of":
        options.update(
            part_digits=args.part_digits,
            preset=args.preset,
            sequence=args.sequence,
            raw_feature=args.raw_feature,
            empty=args.empty,
        )
    else:
        options.update(compression=args.compression, lossy=args.lossy)
    return options


def _report(summary: Dict[str, Any]) -> str:
    good = [d for d in summary["datasets"] if d["status"] in ("converted", "kept")]
    return (
        f"Converted {len(good)} dataset(s) ({summary['records']} records, "
        f"{summary['input_bytes']} bytes read, {summary['output_bytes']} bytes written) "
        f"from {summary['input']} into {summary['output']} in {summary['seconds']:.2f} s"
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the exit status (the console script exits with it)."""
    args = _parser().parse_args(argv)
    convert = tf2of if args.command == "tf2of" else of2tf
    try:
        summary = convert(args.input, args.output, **_options(args))
        status = 0
    except ConversionError as err:
        summary, status = err.summary, 1
        print(f"ofconvert: {err}", file=sys.stderr)
    except UsageError as err:
        print(f"ofconvert: {err}", file=sys.stderr)
        return 2
    except Error as err:
        print(f"ofconvert: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "ofconvert: interrupted: finished datasets stay; run the same command with "
            "--resume to finish",
            file=sys.stderr,
        )
        return 130
    if args.json:
        print(json.dumps(summary, indent=2))
    elif not args.quiet and summary:
        print(_report(summary))
    return status


if __name__ == "__main__":
    sys.exit(main())
