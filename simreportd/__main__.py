"""`python -m simreportd`: the same as the `simreportd` command."""

import sys

from .entry import main

sys.exit(main())
