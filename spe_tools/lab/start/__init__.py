"""Bringing a lab up: its ports and addresses, each piece's command line and start, lab.json."""
