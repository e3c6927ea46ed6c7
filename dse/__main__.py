"""``python -m dse ...`` is ``dse ...``."""

import sys

from dse.cli import main

sys.exit(main())
