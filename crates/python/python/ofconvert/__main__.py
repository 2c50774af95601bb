"""The ``ofconvert`` command of the Python package: the Rust command line itself (the
library the ``ofconvert`` binary is made of), so that every subcommand, flag, output line,
exit status, progress bar, completion script and manual page is the binary's.

``python -m ofconvert ARGS`` runs it too."""

import signal
import sys
from typing import Optional, Sequence

from . import _native

_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name)
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line with ``argv`` (``sys.argv[1:]`` by default) and returns its exit
    status: 0 all good, 1 some input failed, 2 a usage error, 130 interrupted."""
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # The command line stops cleanly on the first SIGINT or SIGTERM and at once on the
    # second, as the binary does: it installs its own handlers, which must not hand the
    # signal on to Python's (that would raise KeyboardInterrupt once it returned).
    previous = [(number, signal.signal(number, signal.SIG_DFL)) for number in _SIGNALS]
    try:
        return _native.main(["ofconvert", *args])
    finally:
        for number, handler in previous:
            signal.signal(number, handler)


if __name__ == "__main__":
    sys.exit(main())
