"""The ``hzio serve`` subcommand: serve datasets to the browser viewer and to remote readers (see
:mod:`hzio._serve`)."""

import sys

from ._cli_util import UsageError


def serve(args):
    """Run ``hzio serve`` until Ctrl-C (or ``--exit-after`` seconds). Local.

    Parameters
    ----------
    args : argparse.Namespace
        ``datasets`` (.idx paths), ``host``, ``port``, ``no_verify`` and ``exit_after``.

    Returns
    -------
    int
        0 when stopped by Ctrl-C or ``--exit-after``.
    """
    try:
        from ._serve import serve_forever
    except ImportError as e:
        raise UsageError(str(e)) from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must lie in 0..65535, not {args.port}")

    def announce(url):
        print(f"hzio: serving {len(args.datasets)} dataset(s) at {url}  (Ctrl-C stops)", flush=True)
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"hzio: listening on {args.host}: anyone who reaches this address can read the datasets",
                  file=sys.stderr, flush=True)

    try:
        serve_forever(args.datasets, args.host, args.port, not args.no_verify, args.exit_after, announce)
    except KeyboardInterrupt:
        pass
    return 0
