"""The exit codes of the subcommands, and the error for arguments that parse but do not make sense.

* 0 -- done;
* 1 -- refused by the service (its error code and words are printed on stderr), or an unknown symbol;
* 2 -- bad arguments (nothing was sent);
* 3 -- the service is not reachable (not running, or no API key on this machine);
* 4 -- declined: nothing was placed or resumed (answered no, or no terminal to ask and no ``--yes``);
* 130 -- interrupted (Ctrl-C).
"""

from __future__ import annotations

OK = 0
REFUSED = 1
BAD_ARGUMENTS = 2
NOT_REACHABLE = 3
DECLINED = 4
INTERRUPTED = 130


class UsageError(Exception):
    """Arguments that parse but do not make a request (``--to-open`` on a stock); exit code 2."""
