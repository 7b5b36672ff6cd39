import sys

from spe_tools.lab.cli import main

sys.exit(main())
