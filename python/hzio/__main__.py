"""``python -m hzio``: the same command line as the ``hzio`` console script (:mod:`hzio.cli`)."""

import sys

from .cli import main

sys.exit(main())
