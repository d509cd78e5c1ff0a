"""`python -m latscope.cli`: the same as the `latscope` command."""

import sys

from . import main

sys.exit(main())
