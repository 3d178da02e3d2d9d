"""`python -m convoeval.cli`: the command line, as the `convoeval` script runs it."""

from convoeval.cli import main

main()
