"""``python -m sevenrocks_env.web``: the same as ``sevenrocks serve``."""

import sys

from .server import main

sys.exit(main())
