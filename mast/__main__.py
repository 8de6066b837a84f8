"""``python -m mast`` runs the CLI."""

import sys

if sys.argv[1:3] == ["hooks", "run"] and not {"-h", "--help"} & set(sys.argv[3:]):
    # What coding-agent hooks run on every turn: answered without loading the whole CLI.
    from mast.integrations.hooks import run_main

    sys.exit(run_main(sys.argv[3:]))

from mast.cli import main  # noqa: E402 - after the hooks fast path on purpose

main()
