"""Interactive labelling sessions with durable storage (``skrisk label``).

* :class:`LabellingSession` -- starts or resumes a session in a folder; its step API
  (``next_question`` / ``answer`` / ``undo``) runs the console loop and the notebook labeller;
* :class:`JupyterLabeller` -- the ``ipywidgets`` labeller over the same session folder and journal;
* :class:`SessionConfig` -- the session's settings, fixed when it starts;
* :func:`export_session` -- writes a session's labels and predicted matches as CSV files;
* :func:`repair_journal` -- moves the journal lines it refuses aside (``skrisk label --repair-journal``);
"""

from ._config import SessionConfig
from ._journal import repair_journal
from ._session import LabellingSession, export_session
from ._widget import JupyterLabeller

__all__ = ["export_session", "JupyterLabeller", "LabellingSession", "repair_journal", "SessionConfig"]
