"""./spe ca: make SPE's interception CA once, and say how to trust it (docs/https.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spe_tools.ca import CaError, create_spe_ca, default_dir, trust_instructions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./spe ca", description=(
        "Create (once) the CA whose leaf certificates the Multiplier presents when it intercepts "
        "HTTPS (--intercept-tls), and print how to trust it."))
    parser.add_argument("--dir", type=Path, default=None,
                        help=f"where the CA lives (default $SPE_CA_DIR or {default_dir()})")
    parser.add_argument("--path", action="store_true", help="print only the certificate's path (creating it if needed)")
    parser.add_argument("--regenerate", action="store_true",
                        help="replace the CA with a new one (clients must trust the new certificate)")
    args = parser.parse_args(argv)
    try:
        files, created = create_spe_ca(args.dir, regenerate=args.regenerate)
    except (CaError, OSError) as e:
        print(f"spe ca: error: {e}", file=sys.stderr)
        return 1
    if args.path:
        print(files.cert)
        return 0
    if created:
        print(f"created a new CA in {files.directory}\n")
    print(trust_instructions(files), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
