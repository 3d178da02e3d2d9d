"""`python -m convoeval ...` runs the command line, like the `convoeval` script."""

from convoeval.cli import main

main()
