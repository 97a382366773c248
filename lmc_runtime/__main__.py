"""``python -m lmc_runtime`` is the ``lmc`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
