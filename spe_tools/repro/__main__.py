import sys

from spe_tools.repro.cli import main

sys.exit(main())
