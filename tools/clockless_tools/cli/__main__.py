"""`python -m clockless_tools.cli`: the `clockless` command without its console script."""

from clockless_tools.cli.app import main

main()
