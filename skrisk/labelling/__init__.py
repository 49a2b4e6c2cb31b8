"""Interactive labelling sessions with durable storage (``skrisk label``).

* :class:`LabellingSession` -- starts or resumes a session in a folder and runs the console loop;
* :class:`Journal`, :func:`replay`, :class:`SessionState` -- the append-only answer journal;
* :func:`atomic_write_text` -- the atomic file replace used for the manifest and the exports.
"""

from ._journal import ANSWERS, Journal, SessionState, SessionWriteError, atomic_write_text, read_events, replay
from ._session import LabellingSession, Question, SessionConfig, export_session

__all__ = [
    "ANSWERS",
    "Journal",
    "LabellingSession",
    "Question",
    "SessionConfig",
    "SessionState",
    "SessionWriteError",
    "atomic_write_text",
    "export_session",
    "read_events",
    "replay",
]
