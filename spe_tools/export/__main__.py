import sys

from spe_tools.export.cli import main

sys.exit(main())
