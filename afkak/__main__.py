"""``python -m afkak``: the afkak command line (:mod:`afkak.cli`)."""

import sys

from afkak.cli import main

sys.exit(main())
