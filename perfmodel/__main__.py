"""`python -m perfmodel` runs the same CLI as the `perfmodel` command."""

from perfmodel.cli import main

main()
