"""How the demo model uses each tool once it has chosen one (:mod:`core.demo.choose`): a skill
per tool, registered under the tool's name (:func:`~core.demo.skills.base.serves`), and
:func:`~core.demo.skills.generic.generic` for a tool without one.

A skill never sees the clock or reads the data directly: it asks ``time.now`` for today when
the request says "tomorrow", looks a contact up with ``people.search`` for their address, and
lists before it picks (a schedule, a subscription, a task). Each step returns the next
:class:`Call`, or the :class:`Say` that ends the turn.

The tools are named as the roster names them; the model resolves a name to the route the
request offers (a definition, the index through ``tool.call``, a native search) and, under
active-tools, searches for it first.
"""

from core.demo.skills import agenda, everyday, mail, targets  # noqa: F401  (they register themselves)
from core.demo.skills.base import SKILLS, Action, Call, Context, Done, Say, skill_for
from core.demo.skills.everyday import beyond
from core.demo.skills.generic import generic

__all__ = ["SKILLS", "Action", "Call", "Context", "Done", "Say", "beyond", "generic", "skill_for"]
