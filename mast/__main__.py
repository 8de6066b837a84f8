"""``python -m mast`` runs the CLI."""

from mast.cli import main

main()
