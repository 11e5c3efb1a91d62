"""Many tables on one machine (``paigow serve --tables FILE``, docs/pit.md).

One worker process per camera runs the same frame loop as ``paigow run``
(:class:`vision.session.Session`: capture, detect, decode, table, audit) and sends its pictures
and rounds to the one web server's process; there each table has a relay feed
(:class:`vision.web.hub.LiveFeed`) behind the usual dealer display, and the pit view lists
every table.

Modules: :mod:`~vision.pit.tables` (the tables file), :mod:`~vision.pit.worker` (the worker
process), :mod:`~vision.pit.supervisor` (starting, watching and restarting the workers; the
relay feeds).
"""

from vision.pit.supervisor import Pit, TableFeed
from vision.pit.tables import TableSpec, load_tables

__all__ = ["Pit", "TableFeed", "TableSpec", "load_tables"]
