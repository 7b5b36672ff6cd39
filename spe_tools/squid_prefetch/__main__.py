import sys

from spe_tools.squid_prefetch.agent import main

sys.exit(main())
