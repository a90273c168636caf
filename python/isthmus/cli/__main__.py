"""``python -m isthmus.cli ...`` is ``isthmus ...``."""
import sys

from . import main

sys.exit(main())
