"""`python -m jobnik_sdk.cli`: the `jobnik` command."""

from .app import main

main()
