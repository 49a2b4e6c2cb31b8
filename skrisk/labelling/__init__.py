"""Interactive labelling sessions with durable storage (``skrisk label``).

* :class:`LabellingSession` -- starts or resumes a session in a folder; its step API
  (``next_question`` / ``answer`` / ``undo``) runs the console loop and the notebook labeller;
* :class:`JupyterLabeller` -- the ``ipywidgets`` labeller over the same session folder and journal;
* :class:`Journal`, :func:`replay`, :class:`SessionState` -- the append-only answer journal;
  :func:`repair_journal` moves the lines it refuses aside (``skrisk label --repair-journal``);
"""

from ._journal import (
    ANSWERS,
    Journal,
    SessionState,
    SessionWriteError,
    read_events,
    repair_journal,
    replay,
)
from ._config import SessionConfig
from ._round import Question
from ._session import LabellingSession, export_session
from ._widget import JupyterLabeller

__all__ = [
    "ANSWERS",
    "Journal",
    "JupyterLabeller",
    "LabellingSession",
    "Question",
    "SessionConfig",
    "SessionState",
    "SessionWriteError",
    "export_session",
    "read_events",
    "repair_journal",
    "replay",
]
