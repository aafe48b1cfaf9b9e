"""``smdebug.core.logger.get_logger``: the package's logger (``logging`` under "smdebug_rs")."""

import logging
import os
import sys

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "off": logging.CRITICAL + 1,
}


def get_logger(name: str = "smdebug_rs") -> logging.Logger:
    """The logger; its level comes from ``SMDEBUG_LOG_LEVEL`` (default ``info``)."""
    logger = logging.getLogger(name)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[%(asctime)s %(levelname)s %(name)s] %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
        level = os.environ.get("SMDEBUG_LOG_LEVEL", "info").lower()
        logger.setLevel(_LEVELS.get(level, logging.INFO))
    return logger
