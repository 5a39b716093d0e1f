"""``python -m relay``: the command line (see :mod:`relay.cli`)."""

import sys

from relay.cli import main

sys.exit(main())
