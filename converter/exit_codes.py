"""The exit codes of the `poolir` command line, in one place for the group and the commands.

    0  success
    1  `poolir verify` found a mismatch (or an unexpected refusal)
    2  bad usage or invalid input: one line on stderr naming the file, the layer and the problem
    3  an internal error: a bug in poolir, never the user's fault
  130  interrupted by Ctrl-C (128 + SIGINT); SIGTERM and SIGHUP exit 128 + their number, leaving no temporary file
"""

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
