"""The everyday requests the demo model knows by their shape: intent patterns over the owner's
words, each with the steps that serve it and the arguments read from the request.

An intent never sees the clock or the data: it asks ``time.now`` for today when the owner
says "tomorrow", looks a contact up with ``people.search`` when the owner names a person, and
lists before it picks (a subscription, a task). Each step returns the next :class:`Call`, or
the :class:`Say` that ends the turn. A request no intent matches goes to the model's generic
policy (score the offered tools, fill what the words give).

The tools are named as the roster names them; the model resolves a name to the route the
request offers (a definition, the index through ``tool.call``, a native search) and, under
active-tools, searches for it first.
"""

from core.demo.intents import agenda, everyday, mail, targets  # noqa: F401  (they register themselves)
from core.demo.intents.base import REGISTRY, Action, Call, Context, Done, Intent, Say
from core.demo.text import normalise

ORDER: tuple[str, ...] = (
    "beyond.demo",  # a poem, a joke, advice: said plainly, before anything reads a word of it
    "web.lookup",  # the weather, the news: web.search, or why not
    "time.place",  # "what time is it in Tokyo": before anything that reads "time"
    "reminder.timed",  # "remind me to call mom at 6pm": a time of day, before the to-do
    "workspace.write",  # "save a file ...": a file, never a memory or a note
    "mail.reply",
    "mail.forward",  # one thread: before a new email and the inbox
    "schedule.write",  # pause, resume, cancel or move one named schedule
    "schedule.ask",
    "people.detail",  # where Sam works, Lena's phone number, when her birthday is
    "calendar.fact",  # how long, when, where is one event
    "calls.start",  # call a contact or a business about something
    "calendar.create",
    "calendar.read",  # an event to add before the calendar read
    "people.search",  # "Lena's email address" is a contact, not mail
    "mail.send",
    "mail.unsubscribe",
    "mail.subscriptions",
    "mail.read",  # an email to send before the inbox
    "tasks.complete",
    "tasks.create",
    "tasks.list",  # a task done or added before the list
    "schedule.list",
    "time.now",
    "memory.save",
    "memory.search",
    "notes.create",
    "notes.search",
    "calls.list",
    "workspace.read",  # "what files ...", "open the lease document"
)
"""The order the intents are tried in: the more specific first."""
INTENTS: tuple[Intent, ...] = tuple(REGISTRY[name] for name in ORDER)
assert set(ORDER) == set(REGISTRY), "every intent has its place in ORDER"


def matching(text: str) -> list[Intent]:
    """The intents the text matches, in the order they are tried."""
    said = normalise(text)
    return [i for i in INTENTS if i.matches(said)]


__all__ = ["INTENTS", "ORDER", "Action", "Call", "Context", "Done", "Intent", "Say", "matching"]
