"""``python -m alphaloop``: the same as the ``alphaloop`` command."""

from alphaloop.cli import main

main()
